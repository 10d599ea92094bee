#!/usr/bin/env bash
# build-art.sh ART: everything scripts/gpu-check.sh needs, built on the development machine (Go,
# clang-19) into the folder ART, for a GPU machine that has neither:
#   libncclbpf.so   the plugin (tuner + profiler)
#   ncclbpf         the CLI (cgo; needs glibc >= the newest GLIBC_ version it references, printed)
#   p2p_count.bpf.o, p2p_count_b.bpf.o (-DVARIANT_B: the object a reload swaps in),
#   p2p_empty.bpf.o (a P2p program that does nothing, for scripts/gpu-profiler-cost.sh),
#   unsafe_null_deref.bpf.o, unsafe_join.bpf.o (rejected by the verifier, on purpose)
#   cost_record.bpf.o (the recording tuner of scripts/gpu-cost-capture.sh)
#   footprint, libnative.so, libemptygo.so   for scripts/footprint.sh
#   net_host, libnccl-net-tcpnet.so          for testhost/gpu/net-check.sh and scripts/bench-net.sh
#   profiler-host                            for scripts/bench-profiler.sh
#   libncclbpf-testing.so                    the plugin with its test entry points and every symbol
#                                            exported, for scripts/bench-net.sh and scripts/bench-profiler.sh
#   tuner-host, rules100.conf                the C tuner host and 100 generated rules (and, with
#                                            libnative.so, what scripts/gpu-tuner-cost.sh runs)
#   rules100-keep.conf                       rules100.conf with the 4-8 KiB all-reduce rule keeping NCCL's choice
#   libtunerab.so                            the switching tuner of scripts/gpu-tuner-cost.sh AB=1
#   jit-amd64.test, loop-clang-19/           the JIT's loop benchmark and its clang-built native loops
#   tunerbench, libharness-native.so         the independent harness of ../shared/bench (when it is
#                                            beside the checkout), for scripts/bench-harness.sh
#   thirdparty/fastsocket/, libnccl-net-fastsocket.so
#                                            Google's nccl-fastsocket (a real net plugin, net ABI v6):
#                                            its sources and the build, for testhost/gpu/net-check.sh,
#                                            when FASTSOCKET_REPO and NCCL_REPO name git clones of
#                                            google/nccl-fastsocket and NVIDIA/nccl (scripts/fastsocket.sh)
# Everything is built by scripts/build.sh (the one recipe); the eBPF objects are the committed ones
# (scripts/build-bpf.sh builds them, with its one set of flags).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 ART" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
ART=$(cd "$1" && pwd)
cd "$ROOT"
R=scripts/build.sh # the one recipe: the same flags as the Makefile, the tests and a release
$R lib "$ART/libncclbpf.so"
$R lib-testing "$ART/libncclbpf-testing.so"
$R cli "$ART/ncclbpf"
$R emptygo "$ART/libemptygo.so"
$R native "$ART/libnative.so"
$R tuner-ab "$ART/libtunerab.so"
$R footprint "$ART/footprint"
$R net-host "$ART/net_host"
$R profiler-host "$ART/profiler-host"
$R tcpnet "$ART/libnccl-net-tcpnet.so"
$R host "$ART/tuner-host"
"$ART/tuner-host" genrules 100 "$ART/rules100.conf" >/dev/null
# The same rules, the 4-8 KiB all-reduce rule keeping NCCL's choice: rules' lookup without its decision
sed 's/^allreduce,4096,8191,.*/allreduce,4096,8191,-1,-1,-1,-1,-1/' "$ART/rules100.conf" >"$ART/rules100-keep.conf"
grep -q '^allreduce,4096,8191,-1,' "$ART/rules100-keep.conf" || { echo "build-art: rules100.conf has no 4096-8191 all-reduce rule" >&2; exit 1; }
SHARED_BENCH="$ROOT/../shared/bench"
if [ -f "$SHARED_BENCH/tunerbench.c" ]; then # the independent harness, for scripts/bench-harness.sh
	SHARED_BENCH=$SHARED_BENCH $R tunerbench "$ART/tunerbench"
	SHARED_BENCH=$SHARED_BENCH $R harness-native "$ART/libharness-native.so"
fi
CLANG=${CLANG:-/usr/bin/clang-19}
# The JIT's loop benchmark as a test binary, and its native loops compiled with clang (the GPU
# machine has gcc only): run it from jit/amd64 with -native clang-19=ART/loop-clang-19.
go test -c -o "$ART/jit-amd64.test" ./jit/amd64
if [ -x "$CLANG" ]; then
	mkdir -p "$ART/loop-clang-19"
	for c in jit/amd64/testdata/loop/*.c; do
		"$CLANG" -O2 -fPIC -shared -o "$ART/loop-clang-19/$(basename "$c" .c).so" "$c"
	done
fi
# The eBPF objects as committed: scripts/build-bpf.sh is their one recipe, and internal/bpfbuild's
# test holds them to it byte for byte.
cp testhost/gpu/p2p_count.bpf.o testhost/gpu/p2p_count_b.bpf.o testhost/gpu/p2p_empty.bpf.o testhost/gpu/unsafe_null_deref.bpf.o \
	testhost/gpu/unsafe_join.bpf.o testhost/gpu/cost_record.bpf.o "$ART/"
"$ART/ncclbpf" verify "$ART/p2p_count.bpf.o" >/dev/null
"$ART/ncclbpf" verify "$ART/cost_record.bpf.o" >/dev/null
"$ART/ncclbpf" verify "$ART/p2p_count_b.bpf.o" >/dev/null
"$ART/ncclbpf" verify "$ART/p2p_empty.bpf.o" >/dev/null
if "$ART/ncclbpf" verify "$ART/unsafe_null_deref.bpf.o" >/dev/null 2>&1; then
	echo "build-art: the verifier accepted unsafe_null_deref.bpf.o; it must refuse it" >&2
	exit 1
fi
if [ -n "${FASTSOCKET_REPO:-}" ] && [ -n "${NCCL_REPO:-}" ]; then
	scripts/fastsocket.sh prepare "$FASTSOCKET_REPO" "$NCCL_REPO" "$ART/thirdparty/fastsocket"
	scripts/fastsocket.sh build "$ART/thirdparty/fastsocket" "$ART/thirdparty/fastsocket/build" 2>"$ART/thirdparty/fastsocket/build.log"
	cp "$ART/thirdparty/fastsocket/build/libnccl-net-fastsocket.so" "$ART/"
else
	echo "build-art: FASTSOCKET_REPO and NCCL_REPO not set: no fastsocket (net-check.sh skips its fastsocket cases)"
fi
for f in libncclbpf.so ncclbpf; do
	echo "$f: newest glibc symbol $(objdump -T "$ART/$f" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
done
ls -l "$ART"

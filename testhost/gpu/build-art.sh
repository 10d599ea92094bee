#!/usr/bin/env bash
# build-art.sh ART: everything scripts/gpu-check.sh needs, built on the development machine (Go,
# clang-19) into the folder ART, for a GPU machine that has neither:
#   libncclbpf.so   the plugin (tuner + profiler)
#   ncclbpf         the CLI (cgo; needs glibc >= the newest GLIBC_ version it references, printed)
#   p2p_count.bpf.o, p2p_count_b.bpf.o (-DVARIANT_B: the object a reload swaps in),
#   p2p_empty.bpf.o (a P2p program that does nothing, for scripts/gpu-profiler-cost.sh),
#   unsafe_null_deref.bpf.o, unsafe_join.bpf.o (rejected by the verifier, on purpose)
#   footprint, libnative.so, libemptygo.so   for scripts/footprint.sh
#   net_host, libnccl-net-tcpnet.so          for testhost/gpu/net-check.sh and scripts/bench-net.sh
#   profiler-host                            for scripts/bench-profiler.sh
#   libncclbpf-testing.so                    the plugin with its test entry points (-tags ncclbpf_testing),
#                                            for scripts/bench-net.sh
#   tuner-host, rules100.conf                the C tuner host and 100 generated rules (and, with
#                                            libnative.so, what scripts/gpu-tuner-cost.sh runs)
#   jit-amd64.test, loop-clang-19/           the JIT's loop benchmark and its clang-built native loops
#   tunerbench, libharness-native.so         the independent harness of ../shared/bench (when it is
#                                            beside the checkout), for scripts/bench-harness.sh
#   thirdparty/fastsocket/, libnccl-net-fastsocket.so
#                                            Google's nccl-fastsocket (a real net plugin, net ABI v6):
#                                            its sources and the build, for testhost/gpu/net-check.sh,
#                                            when FASTSOCKET_REPO and NCCL_REPO name git clones of
#                                            google/nccl-fastsocket and NVIDIA/nccl (scripts/fastsocket.sh)
# The objects are compiled from testhost/gpu/*.bpf.c into ART when clang-19 is there (the committed
# .o files are copied otherwise); the committed ones are left alone.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 ART" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
ART=$(cd "$1" && pwd)
cd "$ROOT"
go build -buildmode=c-shared -o "$ART/libncclbpf.so" ./plugin
go build -tags ncclbpf_testing -buildmode=c-shared -o "$ART/libncclbpf-testing.so" ./plugin
rm -f "$ART/libncclbpf.h" "$ART/libncclbpf-testing.h"
CGO_ENABLED=1 go build -o "$ART/ncclbpf" ./cmd/ncclbpf
go build -buildmode=c-shared -o "$ART/libemptygo.so" ./testhost/emptygo
rm -f "$ART/libemptygo.h"
gcc -O2 -Wall -Werror -shared -fPIC -o "$ART/libnative.so" testhost/native_size_aware.c
gcc -O2 -Wall -Wextra -Werror -Wno-unused-parameter -pthread -I include -o "$ART/footprint" testhost/footprint.c -ldl
gcc -O2 -Wall -Wextra -Werror -Wno-unused-parameter -pthread -o "$ART/net_host" testhost/net_host.c -ldl
gcc -O2 -std=gnu11 -Wall -pthread -o "$ART/profiler-host" testhost/profiler_host.c testhost/profiler_native.c -ldl
gcc -O2 -Wall -Wextra -Werror -Wno-unused-parameter -shared -fPIC -o "$ART/libnccl-net-tcpnet.so" testhost/tcpnet.c
gcc -O2 -Wall -pthread -I include -o "$ART/tuner-host" testhost/host.c -ldl
"$ART/tuner-host" genrules 100 "$ART/rules100.conf" >/dev/null
SHARED_BENCH="$ROOT/../shared/bench"
if [ -f "$SHARED_BENCH/tunerbench.c" ]; then # the independent harness, for scripts/bench-harness.sh
	gcc -O2 -o "$ART/tunerbench" "$SHARED_BENCH/tunerbench.c" -ldl
	gcc -O2 -fPIC -shared -o "$ART/libharness-native.so" "$SHARED_BENCH/native_size_aware.c"
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
if [ -x "$CLANG" ]; then
	C=("$CLANG" -target bpf -mcpu=v3 -O2 -g -Wall -Werror -I include)
	"${C[@]}" -c testhost/gpu/p2p_count.bpf.c -o "$ART/p2p_count.bpf.o"
	"${C[@]}" -DVARIANT_B -c testhost/gpu/p2p_count.bpf.c -o "$ART/p2p_count_b.bpf.o"
	"${C[@]}" -c testhost/gpu/p2p_empty.bpf.c -o "$ART/p2p_empty.bpf.o"
	"${C[@]}" -c testhost/gpu/unsafe_null_deref.bpf.c -o "$ART/unsafe_null_deref.bpf.o"
	"${C[@]}" -c testhost/gpu/unsafe_join.bpf.c -o "$ART/unsafe_join.bpf.o"
else
	cp testhost/gpu/p2p_count.bpf.o testhost/gpu/p2p_count_b.bpf.o testhost/gpu/p2p_empty.bpf.o testhost/gpu/unsafe_null_deref.bpf.o \
		testhost/gpu/unsafe_join.bpf.o "$ART/"
fi
"$ART/ncclbpf" verify "$ART/p2p_count.bpf.o" >/dev/null
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

#!/usr/bin/env bash
# build.sh: the one recipe for libncclbpf.so, the ncclbpf command and the C test hosts. The
# Makefile, the scripts (dist, benchmarks, the GPU artefact builder) and the Go tests
# (internal/buildrecipe) build through it, so the flags below are defined here only; the
# eBPF objects have their own single recipe (scripts/build-bpf.sh).
#
#   scripts/build.sh TARGET OUT [-DNAME[=VALUE]...]
#
# OUT is the file to write. The -D flags select a variant of a C source (testhost/tcpnet.c's
# ABI versions). Targets:
#
#   lib                  libncclbpf.so: NCCL's plugin symbols exported, nothing else
#   lib-testing          libncclbpf.so with the test entry points the hosts drive reloads with
#                        (-tags ncclbpf_testing; every symbol exported)
#   cli                  the ncclbpf command (VERSION and REVISION stamp what --version says)
#   emptygo              the smallest Go c-shared library (testhost/emptygo), for footprint figures
#   host                 testhost/host.c, the NCCL-like tuner host
#   lockstep-host        testhost/lockstep_host.c
#   reload-hammer        testhost/reload_hammer.c
#   net-host             testhost/net_host.c
#   env-host             testhost/env_host.c
#   rccl-names           testhost/rccl_names.c, RCCL's plugin name lookup
#   profiler-host        testhost/profiler_host.c with profiler_native.c
#   footprint            testhost/footprint.c
#   native               testhost/native_size_aware.c, the native C tuner plugin
#   fake-nccl            OUT a folder: testhost/gpu/fake's NCCL and CUDA runtime as an install tree
#                        (include/, lib/libnccl.so, lib64/), for NCCL_HOME and CUDA_HOME of the
#                        GPU scripts' dry runs
#   tuner-ab             testhost/gpu/tuner_ab.c, the tuner plugin that switches between two others
#                        (scripts/gpu-tuner-cost.sh AB=1)
#   tcpnet               testhost/tcpnet.c, a socket net plugin
#   profiler-standalone  plugin/profiler*.c with its clock and grace period, without Go (its host publishes native programs)
#   nccl-p2p             testhost/gpu/nccl_p2p.c against NCCL (NCCL_HOME, else the system's) and
#                        CUDA (CUDA_HOME, default /usr/local/cuda); rpaths to both
#   nccl-allreduce       testhost/gpu/nccl_allreduce.c, the same way
#   nccl-sweep           testhost/gpu/nccl_sweep.c, the same way (scripts/gpu-cost-capture.sh)
#   tunerbench           the independent tuner harness (SHARED_BENCH/tunerbench.c)
#   harness-native       its native plugin (SHARED_BENCH/native_size_aware.c)
#
# Environment: GO (go), CC (gcc; cgo uses it too), GOOS/GOARCH (a cross build: set CC to the
# target's compiler), SANITIZE=1 (C targets with AddressSanitizer and UBSan), STRIP=1 (Go
# targets without symbol table and DWARF, for releases).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
TARGET=$1 OUTPUT=$2
shift 2
for f in "$@"; do
	case $f in -D*) ;; *) echo "build.sh: $f: only -D flags may follow OUT" >&2; exit 2 ;; esac
done
case $OUTPUT in /*) ;; *) OUTPUT=$PWD/$OUTPUT ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p "$(dirname "$OUTPUT")"

GO=${GO:-go}
CC=${CC:-gcc}
export CC CGO_ENABLED=1

# Every C file of this tree: hosts and plugins alike.
CFLAGS=(-O2 -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -pthread -I include)
if [ "${SANITIZE:-0}" = 1 ]; then
	CFLAGS=(-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer "${CFLAGS[@]:1}")
fi
SHARED=(-shared -fPIC)
# C compiled against headers from outside the tree (NCCL, CUDA, the independent harness), whose
# warnings are not ours to fail on.
EXT_CFLAGS=(-O2 -Wall)
# Go: paths trimmed (the build does not depend on where the tree lives).
GOFLAGS_BUILD=(-trimpath)
LDFLAGS=""
[ "${STRIP:-0}" = 1 ] && LDFLAGS="-s -w"
# The production library exports NCCL's plugin tables only (plugin/exports.map).
EXPORTS="-extldflags=-Wl,--version-script=$ROOT/plugin/exports.map"

cshared() { # PKG [TAGS]: a Go c-shared library, without cgo's header of the Go exports
	local tags=()
	[ -n "${2:-}" ] && tags=(-tags "$2")
	"$GO" build "${GOFLAGS_BUILD[@]}" "${tags[@]}" -buildmode=c-shared -ldflags "$LDFLAGS ${3:-}" -o "$OUTPUT" "$1"
	rm -f "${OUTPUT%.so}.h"
}
prog() { "$CC" "${CFLAGS[@]}" "$@" -o "$OUTPUT" "${SRC[@]}" -ldl; }
dso() { "$CC" "${CFLAGS[@]}" "${SHARED[@]}" "$@" -o "$OUTPUT" "${SRC[@]}"; }

case $TARGET in
lib) cshared ./plugin "" "$EXPORTS" ;;
lib-testing) cshared ./plugin ncclbpf_testing ;;
emptygo) cshared ./testhost/emptygo ;;
cli)
	"$GO" build "${GOFLAGS_BUILD[@]}" \
		-ldflags "$LDFLAGS -X main.version=${VERSION:-unknown} -X main.revision=${REVISION:-unknown}" \
		-o "$OUTPUT" ./cmd/ncclbpf
	;;
host) SRC=(testhost/host.c) && prog "$@" ;;
lockstep-host) SRC=(testhost/lockstep_host.c) && prog "$@" ;;
reload-hammer) SRC=(testhost/reload_hammer.c) && prog "$@" ;;
net-host) SRC=(testhost/net_host.c) && prog "$@" ;;
env-host) SRC=(testhost/env_host.c) && prog "$@" ;;
rccl-names) SRC=(testhost/rccl_names.c) && prog -I testhost "$@" ;;
profiler-host) SRC=(testhost/profiler_host.c testhost/profiler_native.c) && prog "$@" ;;
footprint) SRC=(testhost/footprint.c) && prog "$@" ;;
native) SRC=(testhost/native_size_aware.c) && dso "$@" ;;
tuner-ab) SRC=(testhost/gpu/tuner_ab.c) && dso "$@" -ldl ;;
fake-nccl)
	mkdir -p "$OUTPUT/include" "$OUTPUT/lib" "$OUTPUT/lib64"
	cp testhost/gpu/fake/nccl.h testhost/gpu/fake/cuda_runtime.h "$OUTPUT/include/"
	"$CC" "${CFLAGS[@]}" "${SHARED[@]}" "$@" -o "$OUTPUT/lib/libnccl.so" testhost/gpu/fake/fake_nccl.c -ldl
	ln -sf ../lib/libnccl.so "$OUTPUT/lib64/libnccl.so"
	echo 'int fake_cudart_is_in_libnccl;' | "$CC" "${SHARED[@]}" -x c -o "$OUTPUT/lib64/libcudart.so" -
	;;
tcpnet) SRC=(testhost/tcpnet.c) && dso "$@" ;;
profiler-standalone) SRC=(plugin/profiler.c plugin/profiler_events.c plugin/profiler_abi.c plugin/clock.c plugin/grace.c) && dso "$@" ;;
nccl-p2p | nccl-allreduce | nccl-sweep)
	CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
	nccl=() nl=-lnccl
	if [ -n "${NCCL_HOME:-}" ]; then
		nccl=(-I"$NCCL_HOME/include" -L"$NCCL_HOME/lib" -Wl,-rpath,"$NCCL_HOME/lib")
		[ -e "$NCCL_HOME/lib/libnccl.so" ] || nl=-l:libnccl.so.2
	fi
	src=testhost/gpu/nccl_p2p.c
	[ "$TARGET" = nccl-allreduce ] && src=testhost/gpu/nccl_allreduce.c
	[ "$TARGET" = nccl-sweep ] && src=testhost/gpu/nccl_sweep.c
	"$CC" "${EXT_CFLAGS[@]}" "$@" "${nccl[@]}" -I"$CUDA_HOME/include" -o "$OUTPUT" "$src" \
		-L"$CUDA_HOME/lib64" -Wl,-rpath,"$CUDA_HOME/lib64" "$nl" -lcudart
	;;
tunerbench | harness-native)
	SB=${SHARED_BENCH:-$ROOT/../shared/bench}
	if [ "$TARGET" = tunerbench ]; then
		"$CC" "${EXT_CFLAGS[@]}" "$@" -o "$OUTPUT" "$SB/tunerbench.c" -ldl
	else
		"$CC" "${EXT_CFLAGS[@]}" "${SHARED[@]}" "$@" -o "$OUTPUT" "$SB/native_size_aware.c"
	fi
	;;
*)
	echo "build.sh: unknown target $TARGET (scripts/build.sh without arguments lists them)" >&2
	exit 2
	;;
esac

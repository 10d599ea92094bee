#!/usr/bin/env bash
# profiler-cost-dry.sh ART [ROUNDS]: scripts/gpu-profiler-cost.sh without a GPU, on the fake NCCL
# (testhost/gpu/fake/fake_nccl.c: a 1-rank communicator whose send/recv-to-self groups report
# P2p events to the real profiler plugin, as NCCL 2.28 does). The plugin, the policies and the
# script are real; the fake's own work is not NCCL's, so its figures prove the path and the script,
# nothing about NCCL's cost.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [ROUNDS]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
F=$ROOT/testhost/gpu/fake
T=$(mktemp -d /tmp/profiler-cost-dry.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/include" "$T/lib" "$T/lib64"
cp "$F/nccl.h" "$F/cuda_runtime.h" "$T/include/"
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$T/lib/libnccl.so" "$F/fake_nccl.c" -ldl
echo 'int fake_cudart_is_in_libnccl;' | gcc -shared -fPIC -x c -o "$T/lib64/libcudart.so" -
NCCL_HOME=$T CUDA_HOME=$T "$ROOT/scripts/gpu-profiler-cost.sh" "$1" "${2:-3}"

#!/usr/bin/env bash
# profiler-cost-dry.sh ART [ROUNDS]: scripts/gpu-profiler-cost.sh without a GPU, on the fake NCCL
# (testhost/gpu/fake/fake_nccl.c: a 1-rank communicator whose send/recv-to-self groups report
# P2p events to the real profiler plugin, as NCCL 2.28 does). The plugin, the policies and the
# script are real; the fake's own work is not NCCL's, so its figures prove the path and the script,
# nothing about NCCL's cost.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [ROUNDS]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/profiler-cost-dry.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$ROOT/scripts/build.sh" fake-nccl "$T"
NCCL_HOME=$T CUDA_HOME=$T "$ROOT/scripts/gpu-profiler-cost.sh" "$1" "${2:-3}"

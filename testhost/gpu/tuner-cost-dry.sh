#!/usr/bin/env bash
# tuner-cost-dry.sh ART [ROUNDS]: scripts/gpu-tuner-cost.sh without a GPU, on the fake NCCL
# (testhost/gpu/fake/fake_nccl.c with FAKE_GPUS=2: a 2-rank communicator whose all-reduces ask the
# real tuner plugin for every call, as NCCL's enqueue path does), then with FAKE_GPUS=1 in the script's
# process mode (two rank processes sharing the one fake GPU, meeting in shared memory, as two ranks
# share a GPU through NCCL_HOSTID on the GPU machine). Everything of ours is real: the
# plugins, the policies, the script and its figures; the fake's own work (host-memory sums) is not
# NCCL's, so the figures say what the tuner adds to a launch path of that cost, nothing about NCCL.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [ROUNDS]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/tuner-cost-dry.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$ROOT/scripts/build.sh" fake-nccl "$T"
FAKE_GPUS=2 NCCL_HOME=$T CUDA_HOME=$T ITERS=${ITERS:-2000} "$ROOT/scripts/gpu-tuner-cost.sh" "$1" "${2:-3}" 2
FAKE_GPUS=1 NCCL_HOME=$T CUDA_HOME=$T ITERS=${ITERS:-2000} "$ROOT/scripts/gpu-tuner-cost.sh" "$1" "${2:-3}" 2

#!/usr/bin/env bash
# cost-capture-dry.sh ART OUT [MAX_BYTES]: scripts/gpu-cost-capture.sh without a GPU, on the fake NCCL
# (testhost/gpu/fake/fake_nccl.c with FAKE_RANKS_APART=1: each forked rank of nccl_sweep is a rank of
# its own process; rank 0 prints a Ring-only tuning table in NCCL's format and every collective asks
# the real tuner plugin with the cost table that table gives). Everything of ours is real: the plugin,
# the recording policy, the sweep program, the control socket, the map dump and the script; the
# fake's table is not NCCL's, so the capture proves the tooling and the comparison, not the model
# (internal/ncclabi/testdata/capture/fake-nccl-ring: go test ./internal/ncclabi -run TestCaptures).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 ART OUT [MAX_BYTES]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/cost-capture-dry.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$ROOT/scripts/build.sh" fake-nccl "$T"
FAKE_RANKS_APART=1 NCCL_HOME=$T CUDA_HOME=$T "$ROOT/scripts/gpu-cost-capture.sh" "$1" "$2" 2 "${3:-1048576}"

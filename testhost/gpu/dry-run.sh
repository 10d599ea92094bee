#!/usr/bin/env bash
# dry-run.sh ART [OUT]: scripts/gpu-check.sh without a GPU. The CUDA runtime and NCCL are replaced by
# testhost/gpu/fake/fake_nccl.c (host memory; it loads the real libncclbpf.so from ART as NCCL 2.28
# does on a 1-rank communicator: version lines, profiler then tuner init per communicator, P2p events
# for send/recv to self, finalize at destroy) and torch by testhost/gpu/fake/torch (lists for
# tensors, torch.distributed over the fake NCCL through ctypes). Everything of ours is real: the
# plugin, its policies, the verifier's verdicts, printk, warnings, the control plane when the CLI has
# it, the script and its analysis. Timings are of the fake and mean nothing beyond the plugin's
# host-side cost per event. Small counts and rounds unless the caller sets them.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [OUT]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
F=$ROOT/testhost/gpu/fake
T=$(mktemp -d /tmp/gpu-dry.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$ROOT/scripts/build.sh" fake-nccl "$T"
cat >"$T/python3" <<PY
#!/bin/sh
PYTHONPATH=$F\${PYTHONPATH:+:\$PYTHONPATH} exec python3 "\$@"
PY
chmod +x "$T/python3"
export FAKE_NCCL_LIB=$T/lib64/libnccl.so
PY=$T/python3 CUDA_HOME=$T ROUNDS=${ROUNDS:-2} PY_ROUNDS=${PY_ROUNDS:-1} GROUPS_A=${GROUPS_A:-400} \
	GROUPS_B=${GROUPS_B:-100} C_GROUPS=${C_GROUPS:-300} CASE_TIMEOUT=${CASE_TIMEOUT:-60} \
	"$ROOT/scripts/gpu-check.sh" "$1" "${2:-$PWD/gpu-dry-out}"

#!/usr/bin/env bash
# gpu-cost-capture.sh ART OUT [NRANKS] [MAX_BYTES]: capture NCCL's cost tables on a GPU machine, for
# internal/ncclabi's TestCaptures (copy OUT's tuning.log and costs.json to
# internal/ncclabi/testdata/capture/NAME/). One GPU is enough: testhost/gpu/nccl_sweep.c forks NRANKS
# (2) ranks, each its own "node" (NCCL_HOSTID), which share the GPU over NCCL's Socket transport on
# the loopback interface, and runs one AllReduce, AllGather, ReduceScatter, Broadcast and Reduce per
# size, 8 B to MAX_BYTES (1 GiB) by powers of two. The tuner plugin is ART/libncclbpf.so with the
# recording policy ART/cost_record.bpf.o (testhost/gpu/cost_record.bpf.c), which keeps the cost
# table NCCL hands it per (collective, bytes) and leaves every decision to NCCL. Once the calls are
# done, `ART/ncclbpf map dump --json` reads the policy's map of rank 0 through the control socket;
# then the ranks finish.
#
# Writes OUT/tuning.log (NCCL's log: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING, the sweep's own
# lines, and a last line "# captured: ..." with the GPU and NCCL), OUT/costs.json (the calls, see
# internal/ncclabi.Capture) and OUT/map.json (the raw dump).
#
# The sweep is built by scripts/build.sh nccl-sweep against NCCL_HOME (include/nccl.h,
# lib/libnccl.so[.2]) if set, else the system's nccl.h, else the NCCL of python3's PyTorch
# (nvidia.nccl); CUDA from CUDA_HOME (/usr/local/cuda). ART: libncclbpf.so, ncclbpf and
# cost_record.bpf.o (testhost/gpu/build-art.sh copies them).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 ART OUT [NRANKS] [MAX_BYTES]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
NRANKS=${3:-2}
MAX_BYTES=${4:-1073741824}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for f in libncclbpf.so ncclbpf cost_record.bpf.o; do
	[ -e "$ART/$f" ] || { echo "gpu-cost-capture: $ART/$f is missing (testhost/gpu/build-art.sh ART)" >&2; exit 2; }
done
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -z "${NCCL_HOME:-}" ] && [ ! -e /usr/include/nccl.h ]; then
	NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) or list(nvidia.nccl.__path__)[0])' 2>/dev/null ||
		python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
	[ -n "$NCCL_HOME" ] || { echo "gpu-cost-capture: no NCCL: set NCCL_HOME" >&2; exit 2; }
	export NCCL_HOME
fi
W=$(mktemp -d)
SWEEP=
cleanup() {
	touch "$W/go" # the ranks finish if the script stops early
	[ -n "$SWEEP" ] && wait "$SWEEP" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
"$ROOT/scripts/build.sh" nccl-sweep "$W/nccl_sweep"
"$ART/ncclbpf" verify "$ART/cost_record.bpf.o" >/dev/null

export NCCL_TUNER_PLUGIN=$ART/libncclbpf.so NCCLBPF_POLICY=$ART/cost_record.bpf.o
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export NCCL_NVLS_ENABLE=0 NCCLBPF_CONTROL=on NCCLBPF_CONTROL_DIR=$W/ctl
unset NCCL_PROFILER_PLUGIN NCCLBPF_RULES_FILE NCCL_ALGO NCCL_PROTO
mkdir -p "$W/ctl"
"$W/nccl_sweep" "$NRANKS" "$W/go" "$MAX_BYTES" >"$OUT/tuning.log" 2>&1 &
SWEEP=$!
pid=
for _ in $(seq 1200); do # 600 s
	pid=$(sed -n 's/^NCCL_SWEEP ready pid=\([0-9]*\).*/\1/p' "$OUT/tuning.log")
	[ -n "$pid" ] && break
	kill -0 "$SWEEP" 2>/dev/null || break
	sleep 0.5
done
if [ -z "$pid" ]; then
	echo "gpu-cost-capture: the sweep did not get ready; the end of its log:" >&2
	tail -30 "$OUT/tuning.log" >&2
	exit 1
fi
"$ART/ncclbpf" map dump --dir "$W/ctl" --json "$pid" costs >"$OUT/map.json"
touch "$W/go"
rc=0
wait "$SWEEP" || rc=$?
SWEEP=
[ $rc = 0 ] || { echo "gpu-cost-capture: the sweep failed ($rc); see $OUT/tuning.log" >&2; exit 1; }
CC_GPU=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null | head -1 || true)
echo "# captured: gpu=${CC_GPU:-unknown} ranks=$NRANKS nccl_home=${NCCL_HOME:-system} $(date -u +%FT%TZ)" >>"$OUT/tuning.log"
CAP=$(echo "$CC_GPU" | awk -F', *' '{split($2, v, "."); if (v[1] != "") print v[1] * 10 + v[2]}')
python3 - "$OUT/map.json" "$OUT/costs.json" "${CAP:-0}" <<'PY'
import json, sys
src, dst, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
dump = json.load(open(src))
calls = []
for e in dump["entries"]:
    k, v = e["key"], e["value"]
    calls.append({"coll": k["coll_type"], "n_bytes": k["n_bytes"], "num_pipe_ops": v["num_pipe_ops"],
                  "n_ranks": v["n_ranks"], "n_nodes": v["n_nodes"], "cost_bits": v["cost"]})
calls.sort(key=lambda c: (c["coll"], c["n_bytes"]))
out = {"min_comp_cap": cap, "calls": calls}
with open(dst, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"))
    f.write("\n")
print("gpu-cost-capture: %d calls, compute capability %d" % (len(calls), cap))
PY
grep -c "NCCL INFO   Algorithm   |" "$OUT/tuning.log" | sed 's/^/gpu-cost-capture: table blocks in tuning.log: /'

#!/usr/bin/env bash
# net-check.sh: ncclbpf's net wrapper under real NCCL (PyTorch's), separate from scripts/gpu-check.sh.
#
#   testhost/gpu/net-check.sh ART [OUT]
#
# ART: the folder of testhost/gpu/build-art.sh (libncclbpf.so and, optionally, the CLI ncclbpf). The
# inner plugin of the wrapper is INNER (environment) when set — a real net plugin built on this machine,
# e.g. Google's nccl-fastsocket built from its public source (it must export ncclNetPlugin_v10, _v11 or
# _v12; an older one is refused with the wrapper's warning, which this script reports) — else the
# test plugin testhost/tcpnet.c, compiled here with gcc (or taken from ART/libnccl-net-tcpnet.so).
# The policy is policies/net_peers/net_peers.bpf.o (per-peer bytes and latency histograms).
#
# Cases, each under `timeout` (CASE_TIMEOUT, default 180 s); one log per case in OUT
# (default ./net-check-out), summary.txt ends with "NET-CHECK: PASS" or "NET-CHECK: FAIL":
#   wrap       1 rank: NCCL_NET_PLUGIN=libncclbpf.so loads the wrapper, which loads the inner plugin
#              ("ncclbpf: net: wrapping"); NCCL initializes and assigns it under the inner plugin's
#              name and sees its device (name in NCCL's log or topology dump); results right
#   missing    NCCLBPF_NET_PLUGIN names a file that does not exist: exactly one ncclbpf net warning,
#              NCCL falls back to its own transport (not the inner one), results right, and the
#              tuner/profiler side of the same library still loads its policy
#   unset      NCCLBPF_NET_PLUGIN unset: the same fallback
#   multi      (only with >= 2 GPUs, or NRANKS set) NRANKS ranks (default: all GPUs, at most 8) with
#              NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1, so that every byte between GPUs goes through
#              the net transport, i.e. through the wrapper into the inner plugin: NCCL's log shows
#              channels "via NET/<inner>", all-reduce and send/recv results right; when ART has the
#              CLI, rank 0 dumps the maps net_peers and net_slow before it exits
#   multi-fallback  the same job with the inner plugin missing: NCCL's own net transport, results right
#
# Knobs: PY (python3), ITERS (50), ELEMS (1048576), NRANKS, CASE_TIMEOUT, INNER.
set -uo pipefail

usage() { echo "usage: $0 ART [OUT]" >&2; exit 2; }
[ $# -ge 1 ] || usage
ART=$(cd "$1" 2>/dev/null && pwd) || { echo "net-check: $1: no such folder" >&2; exit 2; }
OUT=${2:-$PWD/net-check-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-python3}
LIB=$ART/libncclbpf.so
CLI=$ART/ncclbpf
POLICY=$ROOT/policies/net_peers/net_peers.bpf.o
ITERS=${ITERS:-50}
ELEMS=${ELEMS:-1048576}
CASE_TIMEOUT=${CASE_TIMEOUT:-180}
[ -f "$LIB" ] || { echo "net-check: $LIB missing (testhost/gpu/build-art.sh ART)" >&2; exit 2; }
[ -f "$POLICY" ] || { echo "net-check: $POLICY missing" >&2; exit 2; }

if [ -n "${INNER:-}" ]; then
	[ -f "$INNER" ] || { echo "net-check: INNER=$INNER: no such file" >&2; exit 2; }
	INNER_NAME=${INNER_NAME:-}
elif [ -f "$ART/libnccl-net-tcpnet.so" ]; then
	INNER=$ART/libnccl-net-tcpnet.so
	INNER_NAME=tcpnet
else
	INNER=$OUT/libnccl-net-tcpnet.so
	INNER_NAME=tcpnet
	gcc -O2 -Wall -Wextra -Wno-unused-parameter -shared -fPIC -o "$INNER" "$ROOT/testhost/tcpnet.c" ||
		{ echo "net-check: cannot build testhost/tcpnet.c (gcc)"; exit 2; }
fi
NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
FAILED=0

say() { echo "$*" | tee -a "$SUMMARY"; }
pass() { say "PASS $1: $2"; }
fail() { say "FAIL $1: $2"; FAILED=1; }

# run NAME NRANKS [ENV...]: runs net_check.py with NCCL's INFO log into OUT/NAME.log.
run() {
	local name=$1 n=$2
	shift 2
	local endcmd=""
	if [ -x "$CLI" ] && [ "$n" -ge 2 ]; then
		endcmd="sh -c '$CLI map dump {pid} net_peers; $CLI map dump {pid} net_slow'"
	fi
	env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV NCCL_TOPO_DUMP_FILE="$OUT/$name-topo.xml" "$@" \
		timeout "$CASE_TIMEOUT" "$PY" "$ROOT/testhost/gpu/net_check.py" --nranks "$n" --iters "$ITERS" \
		--elems "$ELEMS" --port $((29500 + RANDOM % 1000)) ${endcmd:+--end-cmd "$endcmd"} >"$OUT/$name.log" 2>&1
	echo $?
}

result_ok() { grep -q '^NET_CHECK {"ok": true' "$OUT/$1.log"; }

# ---- wrap
rc=$(run wrap 1 NCCL_NET_PLUGIN="$LIB" NCCLBPF_NET_PLUGIN="$INNER" NCCLBPF_POLICY="$POLICY")
L=$OUT/wrap.log
if [ "$rc" != 0 ] || ! result_ok wrap; then
	fail wrap "the job failed (rc $rc), see $L"
elif ! grep -q "ncclbpf: net: wrapping" "$L"; then
	if grep -q "ncclbpf: net:" "$L"; then
		fail wrap "the wrapper refused the inner plugin: $(grep -m1 'ncclbpf: net:' "$L")"
	else
		fail wrap "no 'ncclbpf: net: wrapping' line: did NCCL load $LIB as its net plugin?"
	fi
else
	name=${INNER_NAME:-$(grep -m1 -o 'wrapping .*(net ABI v[0-9]*, "[^"]*")' "$L" | sed 's/.*, "\(.*\)")/\1/')}
	if ! grep -Eq "(Initialized|Assigned) NET plugin $name|Using network $name" "$L"; then
		fail wrap "NCCL did not initialize/assign the net plugin under the inner name '$name'"
	elif ! grep -q "${name}0\|$name" "$OUT/wrap-topo.xml" 2>/dev/null && ! grep -q "NET/$name" "$L"; then
		fail wrap "the inner plugin's device does not appear in NCCL's topology dump or log"
	else
		pass wrap "NCCL loaded the wrapper, which wraps $name ($(grep -m1 -o 'net ABI v[0-9]*' "$L")); device and properties passed through"
	fi
fi

# ---- missing / unset: fallback
for c in missing unset; do
	if [ $c = missing ]; then
		rc=$(run $c 1 NCCL_NET_PLUGIN="$LIB" NCCL_TUNER_PLUGIN="$LIB" NCCLBPF_NET_PLUGIN=/nonexistent/libnccl-net-x.so NCCLBPF_POLICY="$POLICY")
	else
		rc=$(run $c 1 NCCL_NET_PLUGIN="$LIB" NCCL_TUNER_PLUGIN="$LIB" NCCLBPF_POLICY="$POLICY")
	fi
	L=$OUT/$c.log
	warns=$(grep -c "ncclbpf: net:" "$L")
	if [ "$rc" != 0 ] || ! result_ok $c; then
		fail $c "the job failed (rc $rc), see $L"
	elif [ "$warns" != 1 ]; then
		fail $c "want exactly one ncclbpf net warning, got $warns"
	elif grep -Eq "Using network ${INNER_NAME:-tcpnet}\b" "$L"; then
		fail $c "NCCL still uses the inner plugin"
	elif ! grep -q "ncclbpf: policy .* loaded" "$L"; then
		fail $c "the tuner side of libncclbpf.so did not load its policy"
	else
		pass $c "one warning ($(grep -m1 -o 'ncclbpf: net: [^;]*' "$L")), NCCL fell back ($(grep -m1 -o 'Using network [A-Za-z_]*' "$L" || echo '?')), tuner policy loaded"
	fi
done

# ---- multi
N=${NRANKS:-$NGPU}
[ "$N" -gt 8 ] && N=8
if [ "$N" -ge 2 ]; then
	rc=$(run multi "$N" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN="$LIB" NCCLBPF_NET_PLUGIN="$INNER" NCCLBPF_POLICY="$POLICY")
	L=$OUT/multi.log
	if [ "$rc" != 0 ] || ! result_ok multi; then
		fail multi "the job failed (rc $rc), see $L"
	elif ! grep -q "via NET/" "$L"; then
		fail multi "no channel 'via NET/...' in NCCL's log: the net transport was not used"
	elif ! grep -q "ncclbpf: net: wrapping" "$L"; then
		fail multi "the wrapper did not wrap the inner plugin"
	else
		pass multi "$N ranks over the net transport through the wrapper ($(grep -m1 -o 'via NET/[A-Za-z_0-9/]*' "$L")); results right"
		grep -A40 '"end"' "$L" | head -60 >"$OUT/multi-maps.txt"
	fi
	rc=$(run multi-fallback "$N" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN="$LIB" NCCLBPF_NET_PLUGIN=/nonexistent/x.so NCCLBPF_POLICY="$POLICY")
	if [ "$rc" != 0 ] || ! result_ok multi-fallback; then
		fail multi-fallback "the job failed (rc $rc)"
	else
		pass multi-fallback "NCCL's own net transport ($(grep -m1 -o 'via NET/[A-Za-z_0-9/]*' "$OUT/multi-fallback.log" || echo '?')); results right"
	fi
else
	say "SKIP multi, multi-fallback: $NGPU GPU(s); they need 2 or more (NRANKS=N to force)"
fi

if [ $FAILED = 0 ]; then say "NET-CHECK: PASS"; else say "NET-CHECK: FAIL"; fi
exit $FAILED

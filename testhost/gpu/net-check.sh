#!/usr/bin/env bash
# net-check.sh: ncclbpf's net wrapper under real NCCL (PyTorch's), separate from scripts/gpu-check.sh.
#
#   testhost/gpu/net-check.sh ART [OUT]
#
# ART: the folder of testhost/gpu/build-art.sh (libncclbpf.so and, optionally, the CLI ncclbpf). The
# inner plugin of the wrapper is INNER (environment) when set — any net plugin (net ABI v6 to v12) —
# else the test plugin testhost/tcpnet.c, built here by scripts/build.sh (or taken from
# ART/libnccl-net-tcpnet.so). The fastsocket cases below use Google's plugin in any case.
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
#   fastsocket cases, when ART has Google's nccl-fastsocket (testhost/gpu/build-art.sh with
#   FASTSOCKET_REPO/NCCL_REPO; rebuilt here from ART/thirdparty/fastsocket when g++ is there), a real
#   third-party plugin whose newest table is net ABI v6:
#   fs-wrap    as wrap, with fastsocket as the inner plugin: the wrapper adapts its v6 table, NCCL
#              initializes and assigns it as "FastSocket" and sees its device
#   fs-data    the project's NCCL-like net host (ART/net_host: two processes, listen/connect/accept,
#              regMr, windows of isend/irecv with tags, test polling, close) moves checked data over
#              loopback through the wrapper into fastsocket, without a policy and with the counting
#              policy testhost/net_count_a.bpf.o: no byte wrong, every completion counted once
#   fs-multi   (>= 2 GPUs) as multi, with fastsocket as the inner plugin
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
	"$ROOT/scripts/build.sh" tcpnet "$INNER" ||
		{ echo "net-check: cannot build the tcpnet plugin (scripts/build.sh tcpnet)"; exit 2; }
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

# ---- fastsocket: a real third-party plugin (net ABI v6)
FS=""
[ -f "$ART/libnccl-net-fastsocket.so" ] && FS=$ART/libnccl-net-fastsocket.so
if [ -d "$ART/thirdparty/fastsocket/src" ]; then
	if command -v g++ >/dev/null; then
		if "$ROOT/scripts/fastsocket.sh" build "$ART/thirdparty/fastsocket" "$OUT/fastsocket" >"$OUT/fastsocket-build.log" 2>&1; then
			FS=$OUT/fastsocket/libnccl-net-fastsocket.so
			say "fastsocket built on this machine: $(tail -1 "$OUT/fastsocket-build.log")"
		else
			fail fastsocket-build "scripts/fastsocket.sh build failed, see $OUT/fastsocket-build.log"
		fi
	else
		say "fastsocket: no g++ here; using the library built with ART"
	fi
fi
if [ -n "$FS" ]; then
	rc=$(run fs-wrap 1 NCCL_NET_PLUGIN="$LIB" NCCLBPF_NET_PLUGIN="$FS" NCCLBPF_POLICY="$POLICY")
	L=$OUT/fs-wrap.log
	if [ "$rc" != 0 ] || ! result_ok fs-wrap; then
		fail fs-wrap "the job failed (rc $rc), see $L"
	elif ! grep -q 'ncclbpf: net: wrapping .*(net ABI v6, "FastSocket")' "$L"; then
		fail fs-wrap "no 'ncclbpf: net: wrapping ... (net ABI v6, \"FastSocket\")' line: $(grep -m1 'ncclbpf: net:' "$L" || echo none)"
	elif ! grep -Eq "(Initialized|Assigned) NET plugin FastSocket|Using network FastSocket" "$L"; then
		fail fs-wrap "NCCL did not initialize/assign the net plugin as FastSocket"
	else
		pass fs-wrap "NCCL loaded the wrapper, which wraps fastsocket (net ABI v6, adapted); $(grep -m1 -Eo '(Initialized|Assigned) NET plugin FastSocket|Using network FastSocket' "$L")"
	fi
	NH=$ART/net_host
	if [ -x "$NH" ]; then
		for pol in none count; do
			p=none
			[ $pol = count ] && p=$ROOT/testhost/net_count_a.bpf.o
			L=$OUT/fs-data-$pol.log
			env NCCL_SOCKET_IFNAME=lo NCCLBPF_CONTROL=0 NCCLBPF_POLICY="$p" NCCLBPF_NET_PLUGIN="$FS" \
				timeout "$CASE_TIMEOUT" "$NH" transfer "$LIB" 12 4 500 8 >"$L" 2>"$OUT/fs-data-$pol.err"
			rc=$?
			msgs=2000 ok=1 why=""
			for r in r0 r1; do
				v() { awk -v k="$r $1" '$1" "$2 == k {print $3}' "$L"; }
				[ "$(v init)" = 0 ] || { ok=0; why="$r init $(v init)"; }
				[ "$(v bad)" = 0 ] || { ok=0; why="$r: $(v bad) messages wrong"; }
				[ "$(v sends)" = $msgs ] && [ "$(v recvs)" = $msgs ] || { ok=0; why="$r: $(v sends) sends, $(v recvs) receives of $msgs"; }
				[ "$(v w_inner)" = 6 ] || { ok=0; why="$r: wrapper reports inner v$(v w_inner)"; }
				if [ $pol = count ]; then
					[ "$(v w_calls_send)" = $msgs ] && [ "$(v w_calls_recv)" = $msgs ] && [ "$(v w_inflight)" = 0 ] ||
						{ ok=0; why="$r: the policy ran $(v w_calls_send)/$(v w_calls_recv) times for $msgs/$msgs completions, $(v w_inflight) left in flight"; }
				fi
			done
			if [ "$rc" != 0 ] || [ $ok != 1 ]; then
				fail fs-data-$pol "rc $rc; $why (see $L)"
			else
				pass fs-data-$pol "2 processes x 4 connections, $msgs messages each way through the wrapper into fastsocket, every byte checked ($(awk '$1=="r0" && $2=="unsized" {print $3}' "$L") completions without a size from fastsocket, checked at the size sent)$([ $pol = count ] && echo '; counting policy: every completion once')"
			fi
		done
	else
		say "SKIP fs-data: $NH missing (testhost/gpu/build-art.sh)"
	fi
	if [ "$N" -ge 2 ]; then
		rc=$(run fs-multi "$N" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN="$LIB" NCCLBPF_NET_PLUGIN="$FS" NCCLBPF_POLICY="$POLICY")
		L=$OUT/fs-multi.log
		if [ "$rc" != 0 ] || ! result_ok fs-multi; then
			fail fs-multi "the job failed (rc $rc), see $L"
		elif ! grep -q "via NET/FastSocket" "$L"; then
			fail fs-multi "no channel 'via NET/FastSocket' in NCCL's log"
		else
			pass fs-multi "$N ranks over fastsocket through the wrapper; results right"
		fi
	else
		say "SKIP fs-multi: $NGPU GPU(s); it needs 2 or more (NRANKS=N to force)"
	fi
else
	say "SKIP fastsocket cases: ART has no libnccl-net-fastsocket.so (build-art.sh with FASTSOCKET_REPO and NCCL_REPO)"
fi

if [ $FAILED = 0 ]; then say "NET-CHECK: PASS"; else say "NET-CHECK: FAIL"; fi
exit $FAILED

#!/usr/bin/env bash
# gpu-check.sh: prove libncclbpf.so under real NCCL on a GPU machine (one GPU is enough), with
# PyTorch's NCCL (distributed, NCCL backend) and, if gcc and nccl.h are there, the system NCCL
# through its C API. It builds nothing of the product there: it takes a folder built elsewhere.
#
#   scripts/gpu-check.sh ART [OUT]
#
# ART holds, built on the development machine (see docs/gpu-results.md):
#   libncclbpf.so            go build -buildmode=c-shared -o ART/libncclbpf.so ./plugin
#   ncclbpf                  CGO_ENABLED=1 go build -o ART/ncclbpf ./cmd/ncclbpf   (glibc >= 2.34)
#   p2p_count.bpf.o, p2p_count_b.bpf.o, unsafe_null_deref.bpf.o   (testhost/gpu/, committed)
# OUT (default ./gpu-check-out) receives one log per case, the JSON lines of the programs and
# summary.txt (testhost/gpu/analyze.py), whose last line is "GPU-CHECK: PASS" or "GPU-CHECK: FAIL".
#
# Cases (each under `timeout`, so a hang is reported as such, never waited out):
#   py-noplugin   PyTorch, no plugin: baseline, results checked
#   py-prof       PyTorch, tuner+profiler = libncclbpf.so, policy p2p_count.bpf.o (target = sends):
#                 versions NCCL chose, per-communicator init/finalize (2 communicators), exact
#                 send/recv counts (printk; and the map through the control socket when the CLI has
#                 `map`), a reload through the control socket halfway through (when it has `reload`)
#   py-none       NCCLBPF_POLICY=none
#   py-unsafe     a policy the verifier rejects: exactly one ncclbpf warning, NCCL's defaults
#   py-unsafe-join  the same with unsafe_join.bpf.o (when ART has it): pointers swapped across a join,
#                 the construction of a profiler program that once passed verification and crashed
#   py-missing    a policy file that does not exist: exactly one ncclbpf warning
#   c-prof        NCCL's C API (system libnccl): explicit ncclCommFinalize/Destroy of 2 communicators,
#                 exact counts through printk
#   bench         send/recv-to-self loops, ROUNDS rounds, each round running no plugin / plugin with
#                 NCCLBPF_POLICY=none / plugin with p2p_count.bpf.o one after the other (C: pipelined
#                 and synchronized; PyTorch: pipelined); the analysis takes medians and ratios
#
# Knobs (environment): PY (python3), ROUNDS (5), PY_ROUNDS (3), GROUPS_A (4000), GROUPS_B (1000),
# C_GROUPS (2000), CASE_TIMEOUT (90 s), BUDGET_S (0: none; cases that would start later than this
# many seconds after the start are skipped and listed), SKIP_BENCH=1, SKIP_C=1, CUDA_HOME (/usr/local/cuda),
# RELOAD_CMD / DUMP_CMD (templates with {cli} {pid} {obj} {n}; by default `ncclbpf reload --var
# target=N PID p2p_count_b.bpf.o` and `ncclbpf map dump PID MAP` of p2p_count, p2p_by_comm and b_count,
# then `ncclbpf ps` and `ncclbpf stats PID`; used only when `ncclbpf help reload` / `help map` succeed).
set -uo pipefail

usage() { echo "usage: $0 ART [OUT]   (ART: folder with libncclbpf.so, ncclbpf, the .bpf.o files)" >&2; exit 2; }
[ $# -ge 1 ] || usage
ART=$(cd "$1" 2>/dev/null && pwd) || { echo "gpu-check: $1: no such folder" >&2; exit 2; }
OUT=${2:-$PWD/gpu-check-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=$ROOT/testhost/gpu
PY=${PY:-python3}
LIB=$ART/libncclbpf.so
CLI=$ART/ncclbpf
PROF=$ART/p2p_count.bpf.o
PROF_B=$ART/p2p_count_b.bpf.o
UNSAFE=$ART/unsafe_null_deref.bpf.o
ROUNDS=${ROUNDS:-5}
PY_ROUNDS=${PY_ROUNDS:-3}
GROUPS_A=${GROUPS_A:-4000}
GROUPS_B=${GROUPS_B:-1000}
C_GROUPS=${C_GROUPS:-2000}
CASE_TIMEOUT=${CASE_TIMEOUT:-90}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
for f in "$LIB" "$CLI" "$PROF" "$PROF_B" "$UNSAFE" "$G/p2p_check.py" "$G/analyze.py"; do
	[ -e "$f" ] || { echo "gpu-check: missing $f" >&2; exit 2; }
done

log() { echo "gpu-check: $*" | tee -a "$OUT/steps.log"; }
T0=$(date +%s)

# The same NCCL settings for every case. NVLS stays off on shared machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=1
unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCLBPF_POLICY NCCLBPF_POLICY_CONFIG NCCL_DEBUG NCCL_DEBUG_SUBSYS

# run_case NAME MODE(noplugin|plugin) POLICY CONFIG DEBUG(1|0) -- COMMAND...
# writes OUT/NAME.log (stdout+stderr) and appends "NAME rc milliseconds" to OUT/cases.txt.
run_case() {
	local name=$1 mode=$2 policy=$3 config=$4 debug=$5
	shift 6
	if [ "${BUDGET_S:-0}" -gt 0 ] && [ $(($(date +%s) - T0)) -ge "$BUDGET_S" ]; then
		log "$name: skipped (BUDGET_S=$BUDGET_S s spent)"
		echo "$name skipped" >>"$OUT/skipped.txt"
		return
	fi
	local t rc ms
	t=$(date +%s%N)
	(
		if [ "$mode" = plugin ]; then
			export NCCL_TUNER_PLUGIN=$LIB NCCL_PROFILER_PLUGIN=$LIB NCCLBPF_POLICY=$policy
			[ -n "$config" ] && export NCCLBPF_POLICY_CONFIG=$config
		fi
		if [ "$debug" = 1 ]; then
			export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV,PROFILE
		else
			export NCCL_DEBUG=WARN
		fi
		exec timeout -k 5 "$CASE_TIMEOUT" "$@"
	) >"$OUT/$name.log" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - t) / 1000000))
	echo "$name $rc $ms" >>"$OUT/cases.txt"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		log "$name: TIMED OUT after ${CASE_TIMEOUT} s (hang)"
	else
		log "$name: rc $rc, $ms ms"
	fi
}

: >"$OUT/cases.txt"
: >"$OUT/steps.log"
rm -f "$OUT/skipped.txt"
# ---- environment -------------------------------------------------------------------------------
{
	echo "date: $(date -u +%FT%TZ)"
	echo "host: $(uname -srm)"
	echo "glibc: $(ldd --version 2>&1 | head -1)"
	nvidia-smi -L 2>&1 | head -8
	nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1 | sed 's/^/driver: /'
	$PY -c 'import torch,sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())' 2>&1
	ls -l /usr/include/nccl.h 2>&1; grep -m3 -E 'define NCCL_(MAJOR|MINOR|PATCH)\b' /usr/include/nccl.h 2>/dev/null
	echo "artifacts:"; (cd "$ART" && sha256sum libncclbpf.so ncclbpf ./*.bpf.o)
	echo "CLI (static use, glibc here):"; "$CLI" help 2>&1 | sed -n '1,20p'
} >"$OUT/env.log" 2>&1
log "environment in env.log"

# The CLI runs here (glibc) and the verifier accepts/refuses what it should.
UNSAFE_JOIN=$ART/unsafe_join.bpf.o
for o in "$PROF" "$PROF_B" "$UNSAFE" $([ -e "$UNSAFE_JOIN" ] && echo "$UNSAFE_JOIN"); do
	echo "== ncclbpf verify $(basename "$o")"
	"$CLI" verify "$o" 2>&1
	echo "rc=$?"
done >"$OUT/verify.log" 2>&1
log "verifier results in verify.log"

# Control plane: use it only if this CLI has it.
HAVE_RELOAD=0 HAVE_DUMP=0
"$CLI" help reload >/dev/null 2>&1 && HAVE_RELOAD=1
"$CLI" help map >/dev/null 2>&1 && HAVE_DUMP=1
N=$((GROUPS_A + GROUPS_B)) # send events and recv events each expected in py-prof
# The reloaded object gets the same target, so its printk also proves the count across the reload.
RELOAD_CMD=${RELOAD_CMD:-"{cli} reload --var target={n} {pid} {obj}"}
DUMP_CMD=${DUMP_CMD:-"sh -c '{cli} map dump {pid} p2p_count; {cli} map dump {pid} p2p_by_comm; {cli} map dump {pid} b_count; {cli} ps; {cli} stats {pid}'"}
fill() { local s=${1//\{cli\}/$CLI}; s=${s//\{obj\}/$PROF_B}; s=${s//\{n\}/$N}; echo "$s"; } # {pid}: by the program
MID="" END=""
[ $HAVE_RELOAD = 1 ] && MID=$(fill "$RELOAD_CMD")
[ $HAVE_DUMP = 1 ] && END=$(fill "$DUMP_CMD")
echo "have_reload=$HAVE_RELOAD have_dump=$HAVE_DUMP groups_a=$GROUPS_A groups_b=$GROUPS_B c_groups=$C_GROUPS" >"$OUT/params.txt"
log "control plane in this CLI: reload=$HAVE_RELOAD map=$HAVE_DUMP"

# ---- PyTorch checks ------------------------------------------------------------------------------
CHECK=("$PY" "$G/p2p_check.py" check --groups-a "$GROUPS_A" --groups-b "$GROUPS_B")
run_case py-prof plugin "$PROF" "target=$N" 1 -- "${CHECK[@]}" --mid-cmd "$MID" --end-cmd "$END" --label py-prof
run_case py-noplugin noplugin "" "" 1 -- "${CHECK[@]}" --label py-noplugin
run_case py-none plugin none "" 1 -- "${CHECK[@]}" --label py-none
run_case py-unsafe plugin "$UNSAFE" "" 1 -- "${CHECK[@]}" --label py-unsafe
if [ -e "$UNSAFE_JOIN" ]; then
	run_case py-unsafe-join plugin "$UNSAFE_JOIN" "" 1 -- "${CHECK[@]}" --label py-unsafe-join
fi
run_case py-missing plugin "$ART/no-such-policy.bpf.o" "" 1 -- "${CHECK[@]}" --label py-missing

# ---- NCCL's C API (system NCCL) ----------------------------------------------------------------------
CBIN=""
if [ "${SKIP_C:-0}" != 1 ]; then
	CBIN=$OUT/nccl_p2p.bin
	# rpath rather than LD_LIBRARY_PATH: the PyTorch cases must keep loading their own libraries
	if gcc -O2 -I"$CUDA_HOME/include" -o "$CBIN" "$G/nccl_p2p.c" -L"$CUDA_HOME/lib64" -Wl,-rpath,"$CUDA_HOME/lib64" \
		-lnccl -lcudart >"$OUT/c-build.log" 2>&1; then
		log "built nccl_p2p (test program) against $(ls /usr/include/nccl.h 2>/dev/null)"
		run_case c-prof plugin "$PROF" "target=$((2 * C_GROUPS))" 1 -- "$CBIN" check "$C_GROUPS" 4096
	else
		log "nccl_p2p did not build (c-build.log): C cases skipped"
		CBIN=""
	fi
fi

# ---- benchmark: interleaved rounds -----------------------------------------------------------------
if [ "${SKIP_BENCH:-0}" != 1 ]; then
	for r in $(seq 1 "$ROUNDS"); do
		[ -n "$CBIN" ] || break
		for cfg in noplugin none prof; do
			case $cfg in
			noplugin) m=noplugin p="" ;;
			none) m=plugin p=none ;;
			prof) m=plugin p=$PROF ;;
			esac
			run_case "bench-c-$cfg-r$r" "$m" "$p" "" 0 -- "$CBIN" bench 2000 7 4096 2
		done
	done
	for r in $(seq 1 "$PY_ROUNDS"); do
		for cfg in noplugin none prof; do
			case $cfg in
			noplugin) m=noplugin p="" ;;
			none) m=plugin p=none ;;
			prof) m=plugin p=$PROF ;;
			esac
			run_case "bench-py-$cfg-r$r" "$m" "$p" "" 0 -- "$PY" "$G/p2p_check.py" bench --iters 1000 --blocks 5 --label "$cfg"
		done
	done
fi
rm -f "$CBIN"
log "all cases done in $(($(date +%s) - T0)) s"

# Everything in a few files (the device tool brings back at most 8): one bundle of the logs.
(cd "$OUT" && tar czf logs.tgz ./*.log cases.txt params.txt $(ls skipped.txt 2>/dev/null))
"$PY" "$G/analyze.py" "$OUT" | tee "$OUT/summary.txt"
grep -q '^GPU-CHECK: PASS' "$OUT/summary.txt"

#!/usr/bin/env bash
# gpu-check.sh: prove libncclbpf.so under real NCCL on a GPU machine (one GPU is enough), with
# PyTorch's NCCL (distributed, NCCL backend) and, if gcc and nccl.h are there, the system NCCL
# through its C API. It builds nothing of the product there: it takes a folder built elsewhere.
#
#   scripts/gpu-check.sh ART [OUT]
#
# ART holds, built on the development machine (see docs/gpu-results.md):
#   libncclbpf.so            scripts/build.sh lib ART/libncclbpf.so
#   ncclbpf                  scripts/build.sh cli ART/ncclbpf   (glibc >= 2.34)
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
#   rel-V-*       NCCL_SOURCES (space-separated NCCL source tarballs, nccl-V.tar.gz, e.g. `git archive
#                 --prefix=nccl-2.30.7/ v2.30.7-1` of NVIDIA/nccl): each release is built here
#                 (make -j src.build, sm_90, SendRecv and AllReduce/Sum/f32 only: NCCL_GENCODE,
#                 NCCL_ONLY_FUNCS override) and nccl_p2p runs on it: rel-V-prof (versions NCCL chose,
#                 exact counts), rel-V-none, rel-V-unsafe (one warning, defaults), rel-V-env (the env
#                 plugin: NCCL_ENV_PLUGIN=libncclbpf.so, a value from NCCLBPF_ENV_FILE reaches NCCL).
#                 releases.txt: per release the build time, the ABI versions chosen and each verdict;
#                 its last line "RELEASES: PASS" or "RELEASES: FAIL". NCCL_KEEP (a folder) keeps the builds.
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
RECIPE=$ROOT/scripts/build.sh # the one build recipe: its nccl-p2p target builds the NCCL test program
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
unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCL_ENV_PLUGIN NCCLBPF_ENV_FILE NCCLBPF_POLICY NCCLBPF_POLICY_CONFIG NCCL_DEBUG NCCL_DEBUG_SUBSYS

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
	if CUDA_HOME=$CUDA_HOME NCCL_HOME= "$RECIPE" nccl-p2p "$CBIN" >"$OUT/c-build.log" 2>&1; then
		log "built nccl_p2p (test program) against $(ls /usr/include/nccl.h 2>/dev/null)"
		run_case c-prof plugin "$PROF" "target=$((2 * C_GROUPS))" 1 -- "$CBIN" check "$C_GROUPS" 4096
	else
		log "nccl_p2p did not build (c-build.log): C cases skipped"
		CBIN=""
	fi
fi

# ---- NCCL releases built from source ---------------------------------------------------------------
REL_OK=1
if [ -n "${NCCL_SOURCES:-}" ]; then
	: >"$OUT/releases.txt"
	RW=${NCCL_KEEP:-$(mktemp -d)}
	mkdir -p "$RW"
	verdict() { echo "$1 $2: $3${4:+ ($4)}" >>"$OUT/releases.txt"; [ "$3" = PASS ] || REL_OK=0; }
	for tb in $NCCL_SOURCES; do
		v=$(basename "$tb" .tar.gz); v=${v#nccl-}
		src=$RW/nccl-$v
		rm -rf "$src" && tar xzf "$tb" -C "$RW" || { verdict "$v" build FAIL "cannot unpack $tb"; continue; }
		t=$(date +%s)
		if ! (cd "$src" && make -j"$(nproc)" src.build \
			NVCC_GENCODE="${NCCL_GENCODE:--gencode=arch=compute_90,code=sm_90}" \
			ONLY_FUNCS="${NCCL_ONLY_FUNCS:-SendRecv|AllReduce Sum f32 * *}") >"$OUT/rel-$v-build.log" 2>&1; then
			verdict "$v" build FAIL "make failed, rel-$v-build.log"
			continue
		fi
		verdict "$v" build PASS "$(($(date +%s) - t)) s"
		bin=$RW/nccl_p2p-$v
		if ! CUDA_HOME=$CUDA_HOME NCCL_HOME=$src/build "$RECIPE" nccl-p2p "$bin" >>"$OUT/rel-$v-build.log" 2>&1; then
			verdict "$v" nccl_p2p FAIL "did not build"
			continue
		fi
		want=$((2 * C_GROUPS))
		run_case "rel-$v-prof" plugin "$PROF" "target=$want" 1 -- "$bin" check "$C_GROUPS" 4096
		run_case "rel-$v-none" plugin none "" 1 -- "$bin" check 200 4096
		run_case "rel-$v-unsafe" plugin "$UNSAFE" "" 1 -- "$bin" check 200 4096
		# A value NCCL reads (and logs) even on one rank, taken out of the process environment: only
		# the env plugin can give it to NCCL.
		printf '# served through the env plugin\nNCCL_NVLS_ENABLE=0\n' >"$RW/env-$v.conf"
		(unset NCCL_NVLS_ENABLE; NCCL_ENV_PLUGIN=$LIB NCCLBPF_ENV_FILE=$RW/env-$v.conf \
			run_case "rel-$v-env" plugin "$PROF" "target=400" 1 -- "$bin" check 200 4096)
		ok() { grep -q "\"ok\":true" "$OUT/$1.log" && grep -q "^$1 0 " "$OUT/cases.txt"; }
		L=$OUT/rel-$v-prof.log
		nv=$(grep -o '"nccl":[0-9]*' "$L" | head -1 | cut -d: -f2)
		tv=$(grep -oE 'TUNER/Plugin: [A-Za-z]+ ncclbpf \(v[0-9]+\)' "$L" | head -1 | grep -oE 'v[0-9]+')
		pv=$(grep -oE 'PROFILER/Plugin: [A-Za-z]+ ncclbpf \(v[0-9]+\)' "$L" | head -1 | grep -oE 'v[0-9]+')
		echo "$v abi: NCCL $nv, tuner ${tv:-none}, profiler ${pv:-none}" >>"$OUT/releases.txt"
		[ -n "$tv" ] && [ -n "$pv" ] && verdict "$v" "loads (tuner $tv, profiler $pv)" PASS || verdict "$v" loads FAIL "no TUNER/PROFILER Plugin line"
		if ok "rel-$v-prof" && grep -q "p2p_count reached func 6 count $want" "$L" && grep -q "p2p_count reached func 7 count $want" "$L" &&
			! grep -q PAST "$L"; then
			verdict "$v" "exact counts ($want sends, $want receives)" PASS
		else
			verdict "$v" "exact counts" FAIL "rel-$v-prof.log"
		fi
		ok "rel-$v-none" && ! grep -q "NCCL WARN ncclbpf" "$OUT/rel-$v-none.log" && verdict "$v" "NCCLBPF_POLICY=none" PASS ||
			verdict "$v" "NCCLBPF_POLICY=none" FAIL
		nw=$(grep -c "NCCL WARN ncclbpf" "$OUT/rel-$v-unsafe.log")
		ok "rel-$v-unsafe" && [ "$nw" = 1 ] && verdict "$v" "rejected policy: one warning, defaults" PASS ||
			verdict "$v" "rejected policy" FAIL "$nw warnings"
		E=$OUT/rel-$v-env.log
		ev=$(grep -oiE 'ENV/Plugin: [A-Za-z]+ ncclbpf[^,]*|env plugin[^.]*ncclbpf[^.]*' "$E" | head -1)
		echo "$v env: ${ev:-no ENV/Plugin line}; $(grep -m1 -o 'ncclbpf: env: [0-9]* values from[^)]*)' "$E")" >>"$OUT/releases.txt"
		if ok "rel-$v-env" && grep -q "NCCL_NVLS_ENABLE set by environment to 0" "$E" && grep -q "p2p_count reached func 6 count 400" "$E"; then
			verdict "$v" "env plugin serves NCCL_NVLS_ENABLE from NCCLBPF_ENV_FILE" PASS "$(grep -c 'ncclbpf: env: NCCL_NVLS_ENABLE=0 (from' "$E") logger lines"
		else
			verdict "$v" "env plugin" FAIL "rel-$v-env.log"
		fi
		rm -f "$bin"
	done
	[ -n "${NCCL_KEEP:-}" ] || rm -rf "$RW"
	[ $REL_OK = 1 ] && echo "RELEASES: PASS" >>"$OUT/releases.txt" || echo "RELEASES: FAIL" >>"$OUT/releases.txt"
	log "releases: $(tail -1 "$OUT/releases.txt") (releases.txt)"
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
(cd "$OUT" && tar czf logs.tgz ./*.log cases.txt params.txt $(ls skipped.txt releases.txt 2>/dev/null))
"$PY" "$G/analyze.py" "$OUT" | tee "$OUT/summary.txt"
[ -n "${NCCL_SOURCES:-}" ] && cat "$OUT/releases.txt"
grep -q '^GPU-CHECK: PASS' "$OUT/summary.txt" && [ $REL_OK = 1 ]

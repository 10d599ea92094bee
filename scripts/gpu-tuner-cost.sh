#!/usr/bin/env bash
# gpu-tuner-cost.sh ART [ROUNDS] [NRANKS]: the tuner's cost on NCCL's launch path (BENCHMARKS.md, "The
# tuner on NCCL's launch path"). ROUNDS (15) rounds alternate four configurations, one run each of
# testhost/gpu/nccl_allreduce.c (7 blocks of ITERS (2,000) groups of one 4 KiB float all-reduce per
# rank; the calling thread's CPU time from ncclGroupStart to the return of ncclGroupEnd, per
# all-reduce call; the median block): no tuner plugin; the size_aware policy as a native C tuner
# (ART/libnative.so); libncclbpf.so with NCCLBPF_POLICY=builtin:size_aware; libncclbpf.so with
# builtin:rules and 100 rules (ART/rules100.conf, or RULES: a rules file). No profiler plugin in any. Where the machine counts
# instructions, each run also reports the calling thread's user-space instructions and cycles per
# call on the same path (7 more blocks). Prints each round as it ends, then each configuration's
# rounds, the medians, and the median over rounds of each round's ratios.
#
# AB=1 compares inside each process instead (testhost/gpu/tuner_ab.c, ART/libtunerab.so): the tuner
# plugin NCCL loads forwards each getCollInfo to no plugin, to the native C size_aware (A) or to
# libncclbpf.so (B), switched between blocks of ITERS groups, every rank at the same group; a process
# runs 7 sets of the three blocks in rotating order. Each round runs two such processes, B with
# builtin:size_aware (sa) and with builtin:rules and 100 rules (rules100), and prints the medians of
# the sets' ratios A/none, B/A, B/none (CPU time, and instructions where counted). The machine's state,
# which moves whole processes by tens of percent, is then the same for the blocks compared.
#
# Pinning (PIN=1, the default where taskset is there): each rank's calling thread gets a core of its
# own after init (NCCL_BENCH_CPUS), the highest-numbered cores first, never CPU 0's; everything else
# of the process (NCCL's proxy threads) and the MPS server run on the CPUs left, hyperthread siblings
# of the timed cores excluded. PIN=0 leaves the scheduler free.
#
# NRANKS (2) ranks: with at least NRANKS GPUs, one process drives them all (`bench`, ncclCommInitAll);
# with fewer, one process per rank (`bench-procs`) and ranks share GPUs, each with its own
# NCCL_HOSTID, so that NCCL sees one node per rank and joins them through its socket transport on
# the loopback interface (NCCL_SOCKET_IFNAME=lo, NCCL_IB_DISABLE=1). MODE=threads or MODE=procs
# forces one. On one GPU without MPS the ranks' kernels time-slice and an all-reduce takes about
# 4 ms of wall time (a round of ITERS=1000 about 170 s); MPS=1 starts a private MPS control daemon
# (nvidia-cuda-mps-control, pipe and log folders in a temporary folder) for the run and stops it at
# the end, so the ranks' kernels run side by side. A 1-rank all-reduce is a copy that never asks the
# tuner: NRANKS < 2 is refused.
#
# Builds the all-reduce program (scripts/build.sh nccl-allreduce) against the system's NCCL
# (CUDA_HOME=/usr/local/cuda) or NCCL_HOME (include/nccl.h, lib/libnccl.so[.2]); ART comes from
# testhost/gpu/build-art.sh. testhost/gpu/tuner-cost-dry.sh runs this script on the fake NCCL,
# without a GPU.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [ROUNDS] [NRANKS]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
ROUNDS=${2:-15}
NRANKS=${3:-2}
ITERS=${ITERS:-2000}
[ "$NRANKS" -ge 2 ] || { echo "gpu-tuner-cost: NRANKS must be 2 or more (NCCL never asks the tuner for 1 rank)" >&2; exit 2; }
if [ -z "${MODE:-}" ]; then
	have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
	[ -n "${FAKE_GPUS:-}" ] && have=$FAKE_GPUS
	MODE=threads
	[ "${have:-0}" -ge "$NRANKS" ] || MODE=procs
fi
case $MODE in
threads) BENCH=bench ;;
procs) BENCH=bench-procs && export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 ;;
*) echo "gpu-tuner-cost: MODE must be threads or procs, not $MODE" >&2 && exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
need=(libncclbpf.so libnative.so rules100.conf)
RULES=$(realpath "${RULES:-$ART/rules100.conf}")
[ "${AB:-0}" = 1 ] && need+=(libtunerab.so)
for f in "${need[@]}"; do
	[ -e "$ART/$f" ] || { echo "gpu-tuner-cost: $ART/$f is missing (testhost/gpu/build-art.sh ART)" >&2; exit 2; }
done
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCLBPF_POLICY NCCLBPF_RULES_FILE
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$ROOT/scripts/build.sh" nccl-allreduce "$W/nccl_allreduce"

. "$ROOT/testhost/gpu/bench-lib.sh"
bench_pin "$NRANKS"
RUN=("${BENCH_RUN[@]}")
if [ "${MPS:-0}" = 1 ]; then
	command -v nvidia-cuda-mps-control >/dev/null ||
		{ echo "gpu-tuner-cost: MPS=1 needs nvidia-cuda-mps-control (the NVIDIA driver's utilities)" >&2; exit 2; }
	export CUDA_MPS_PIPE_DIRECTORY=$W/mps-pipe CUDA_MPS_LOG_DIRECTORY=$W/mps-log
	mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
	"${RUN[@]}" nvidia-cuda-mps-control -d
	trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
	echo "gpu-tuner-cost: MPS control daemon started (pipes in $CUDA_MPS_PIPE_DIRECTORY)"
fi
L=$ART/libncclbpf.so
# run_bench ROUND CONFIG ENV...: one run of the all-reduce program; its output in BENCH_OUT
run_bench() {
	local r=$1 c=$2
	shift 2
	BENCH_OUT=$(env "$@" timeout 120 "${RUN[@]}" "$W/nccl_allreduce" "$BENCH" "$NRANKS" "$ITERS" 7 4096 2>&1) ||
		{ echo "gpu-tuner-cost: round $r, $c failed:" >&2; echo "$BENCH_OUT" >&2; exit 1; }
}
if [ "${AB:-0}" = 1 ]; then
	for r in $(seq "$ROUNDS"); do
		for c in sa rules100; do
			e=(NCCL_TUNER_PLUGIN="$ART/libtunerab.so" TUNER_AB_A="$ART/libnative.so" TUNER_AB_B="$L" NCCL_BENCH_AB=1)
			case $c in
			sa) e+=(NCCLBPF_POLICY=builtin:size_aware) ;;
			rules100) e+=(NCCLBPF_POLICY=builtin:rules NCCLBPF_RULES_FILE="$RULES") ;;
			esac
			run_bench "$r" "$c" "${e[@]}"
			echo "$r $c $(bench_field median_cpu_us_per_call_none) $(bench_field median_cpu_us_per_call_A)" \
				"$(bench_field median_cpu_us_per_call_B) $(bench_field cpu_us_per_call_ratio_A_none)" \
				"$(bench_field cpu_us_per_call_ratio_B_A) $(bench_field cpu_us_per_call_ratio_B_none)" \
				"$(bench_field instructions_per_call_ratio_B_A) $(bench_field instructions_per_call_ratio_B_none)"
		done
	done | tee "$W/rounds.txt"
	echo "In-process comparison, 4 KiB all-reduce ($NRANKS ranks, $MODE; A = native C size_aware, B = libncclbpf.so):"
	echo "  round configuration none_us native_us policy_us native/none policy/native policy/none ins_policy/native ins_policy/none"
	bench_medians "$W/rounds.txt" 3 10 sa rules100
	exit 0
fi
BENCH_CFGS=(noplugin native size_aware rules100)
BENCH_PAIRS=("native noplugin" "size_aware native" "rules100 native" "size_aware noplugin")
for r in $(seq "$ROUNDS"); do
	for c in "${BENCH_CFGS[@]}"; do
		case $c in
		noplugin) e=() ;;
		native) e=(NCCL_TUNER_PLUGIN="$ART/libnative.so") ;;
		size_aware) e=(NCCL_TUNER_PLUGIN="$L" NCCLBPF_POLICY=builtin:size_aware) ;;
		rules100) e=(NCCL_TUNER_PLUGIN="$L" NCCLBPF_POLICY=builtin:rules NCCLBPF_RULES_FILE="$RULES") ;;
		esac
		run_bench "$r" "$c" "${e[@]}"
		echo "$r $c $(bench_field median_cpu_us_per_call) $(bench_field median_instructions_per_call)" \
			"$(bench_field median_cycles_per_call)"
	done
done | tee "$W/rounds.txt"
bench_report "$W/rounds.txt" "CPU µs per 4 KiB all-reduce call (enqueue + group end; $NRANKS ranks, $MODE; median block of each round)" call

#!/usr/bin/env bash
# gpu-profiler-cost.sh ART [ROUNDS]: what a profiler policy costs NCCL on 4 KiB send/recv-to-self
# groups (BENCHMARKS.md, "On real NCCL"), on a GPU machine. ROUNDS (15) rounds alternate four
# configurations, one process each running `nccl_p2p bench 2000 7 4096 0` (7 blocks of 2,000
# pipelined groups; the median block): no plugin; libncclbpf.so with NCCLBPF_POLICY=none; with
# p2p_empty.bpf.o (a P2p completion program that does nothing: NCCL's and the shim's share); with
# p2p_count.bpf.o (the counting policy). Prints each configuration's rounds, the medians, and the
# median over rounds of each round's ratios. Builds testhost/gpu/nccl_p2p.c against the system's NCCL
# (gcc, CUDA_HOME=/usr/local/cuda), or against NCCL_HOME (include/nccl.h and lib/libnccl.so[.2]: a
# release built from source, PyTorch's nvidia/nccl package); ART comes from testhost/gpu/build-art.sh.
#
# AB=1 compares the empty program and p2p_count inside each process instead: one process per round
# starts with the empty program and runs 7 sets of two pipelined blocks, one under each program in
# alternating order, each block after a reload of its program (`ART/ncclbpf reload PID OBJ`, the
# command line's hot reload, outside the timed part; testhost/gpu/nccl_p2p.c NCCL_BENCH_SWITCH_0/_1).
# Prints per round and over rounds the medians of the sets' ratios count/empty. The machine's state,
# which moves whole processes by tens of percent, is then the same for the blocks compared.
#
# The calling thread is pinned to a core of its own and the rest of the process kept off that core
# (testhost/gpu/bench-lib.sh; PIN=0 turns it off). Where the machine counts instructions, each run
# also reports the calling thread's user-space instructions and cycles per group on the same path
# (7 more pipelined blocks), summarized like the times.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [ROUNDS]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
ROUNDS=${2:-15}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
need=(libncclbpf.so p2p_empty.bpf.o p2p_count.bpf.o)
[ "${AB:-0}" = 1 ] && need+=(ncclbpf)
for f in "${need[@]}"; do
	[ -e "$ART/$f" ] || { echo "gpu-profiler-cost: $ART/$f is missing (testhost/gpu/build-art.sh ART)" >&2; exit 2; }
done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_DEBUG=WARN
unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCLBPF_POLICY
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CUDA_HOME=$CUDA_HOME "$ROOT/scripts/build.sh" nccl-p2p "$W/nccl_p2p"
. "$ROOT/testhost/gpu/bench-lib.sh"
bench_pin 1
L=$ART/libncclbpf.so
# run_bench ROUND CONFIG ENV...: one run of the send/recv program; its output in BENCH_OUT
run_bench() {
	local r=$1 c=$2
	shift 2
	BENCH_OUT=$(env "$@" timeout 120 "${BENCH_RUN[@]}" "$W/nccl_p2p" bench 2000 7 4096 0 2>&1) ||
		{ echo "gpu-profiler-cost: round $r, $c failed:" >&2; echo "$BENCH_OUT" >&2; exit 1; }
}
if [ "${AB:-0}" = 1 ]; then
	for r in $(seq "$ROUNDS"); do
		run_bench "$r" ab NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_empty.bpf.o" \
			NCCL_BENCH_SWITCH_0="\"$ART/ncclbpf\" reload \$NCCL_BENCH_PID \"$ART/p2p_empty.bpf.o\" >/dev/null" \
			NCCL_BENCH_SWITCH_1="\"$ART/ncclbpf\" reload \$NCCL_BENCH_PID \"$ART/p2p_count.bpf.o\" >/dev/null"
		echo "$r ab $(bench_field median_us_per_group_0) $(bench_field median_us_per_group_1)" \
			"$(bench_field us_per_group_ratio_1_0) $(bench_field median_instructions_per_group_0)" \
			"$(bench_field median_instructions_per_group_1) $(bench_field instructions_per_group_ratio_1_0)"
	done | tee "$W/rounds.txt"
	echo "In-process comparison, 4 KiB send + recv-to-self groups:"
	echo "  round configuration empty_us count_us count/empty empty_ins count_ins ins_count/empty"
	bench_medians "$W/rounds.txt" 3 8 ab
	exit 0
fi
BENCH_CFGS=(noplugin none empty count)
BENCH_PAIRS=("none noplugin" "empty none" "count none" "count empty" "count noplugin")
for r in $(seq "$ROUNDS"); do
	for c in "${BENCH_CFGS[@]}"; do
		case $c in
		noplugin) e=() ;;
		none) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY=none) ;;
		empty) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_empty.bpf.o") ;;
		count) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_count.bpf.o") ;;
		esac
		run_bench "$r" "$c" "${e[@]}"
		echo "$r $c $(bench_field median_us) $(bench_field instructions_per_group) $(bench_field cycles_per_group)"
	done
done | tee "$W/rounds.txt" # each round as it completes: a run cut short keeps its rounds
bench_report "$W/rounds.txt" "µs per 4 KiB send + recv-to-self group (median block of each round)" group

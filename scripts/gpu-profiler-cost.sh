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
# (testhost/gpu/bench-pin.sh; PIN=0 turns it off). Where the machine counts instructions, each run
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
. "$ROOT/testhost/gpu/bench-pin.sh"
bench_pin 1
L=$ART/libncclbpf.so
med() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
if [ "${AB:-0}" = 1 ]; then
	for r in $(seq "$ROUNDS"); do
		out=$(env NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_empty.bpf.o" \
			NCCL_BENCH_SWITCH_0="\"$ART/ncclbpf\" reload \$NCCL_BENCH_PID \"$ART/p2p_empty.bpf.o\" >/dev/null" \
			NCCL_BENCH_SWITCH_1="\"$ART/ncclbpf\" reload \$NCCL_BENCH_PID \"$ART/p2p_count.bpf.o\" >/dev/null" \
			timeout 120 "${BENCH_RUN[@]}" "$W/nccl_p2p" bench 2000 7 4096 0 2>&1) ||
			{ echo "gpu-profiler-cost: round $r failed:" >&2; echo "$out" >&2; exit 1; }
		field() { v=$(grep -o "\"$1\":[0-9.]*" <<<"$out" | cut -d: -f2) && echo "$v" || echo -; }
		echo "$r ab $(field median_us_per_group_0) $(field median_us_per_group_1) $(field us_per_group_ratio_1_0)" \
			"$(field median_instructions_per_group_0) $(field median_instructions_per_group_1)" \
			"$(field instructions_per_group_ratio_1_0)"
	done | tee "$W/rounds.txt"
	echo "In-process comparison, 4 KiB send + recv-to-self groups, $ROUNDS rounds (medians over rounds):"
	echo "  empty_us count_us count/empty empty_ins count_ins ins_count/empty"
	line=""
	for k in $(seq 3 8); do line="$line $(awk -v k="$k" '{print $k}' "$W/rounds.txt" | med)"; done
	echo " $line"
	exit 0
fi
cfgs=(noplugin none empty count)
for r in $(seq "$ROUNDS"); do
	for c in "${cfgs[@]}"; do
		case $c in
		noplugin) e=() ;;
		none) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY=none) ;;
		empty) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_empty.bpf.o") ;;
		count) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_count.bpf.o") ;;
		esac
		out=$(env "${e[@]}" timeout 90 "${BENCH_RUN[@]}" "$W/nccl_p2p" bench 2000 7 4096 0 2>&1) ||
			{ echo "gpu-profiler-cost: round $r, $c failed:" >&2; echo "$out" >&2; exit 1; }
		v=$(grep -o '"us_per_group":\[[^]]*\]' <<<"$out" | sed 's/.*\[//; s/\]//' | tr ',' '\n' | sort -g |
			awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
		field() { grep -o "\"$1\":[0-9.]*" <<<"$out" | cut -d: -f2 || true; }
		ins=$(field instructions_per_group) cyc=$(field cycles_per_group)
		echo "$r $c $v ${ins:--} ${cyc:--}"
	done
done | tee "$W/rounds.txt" # each round as it completes: a run cut short keeps its rounds
# summary COLUMN WHAT: each configuration's rounds, their medians, the medians of the rounds' ratios
summary() {
	local col=$1
	echo "$2 (median block of each round), $ROUNDS rounds:"
	for c in "${cfgs[@]}"; do
		printf '  %-9s %s\n' "$c" "$(awk -v c="$c" -v k="$col" '$2 == c {printf "%s ", $k}' "$W/rounds.txt")"
	done
	for c in "${cfgs[@]}"; do
		printf '  median %-9s %s\n' "$c" "$(awk -v c="$c" -v k="$col" '$2 == c {print $k}' "$W/rounds.txt" | med)"
	done
	for p in "none noplugin" "empty none" "count none" "count empty" "count noplugin"; do
		set -- $p
		printf '  %s / %s: median of the rounds'"'"' ratios %s\n' "$1" "$2" "$(awk -v a="$1" -v b="$2" -v k="$col" \
			'{v[$1 " " $2] = $k; n = $1} END {for (r = 1; r <= n; r++) printf "%.4f\n", v[r " " b] ? v[r " " a] / v[r " " b] : 0}' \
			"$W/rounds.txt" | med)"
	done
}
summary 3 "µs per 4 KiB send + recv-to-self group"
if ! awk '$4 == "-" {bad = 1} END {exit bad}' "$W/rounds.txt"; then
	echo "(no instruction counts: this machine's CPU has no performance counters for the process)"
else
	summary 4 "User-space instructions per group, calling thread"
	summary 5 "User-space cycles per group, calling thread"
fi

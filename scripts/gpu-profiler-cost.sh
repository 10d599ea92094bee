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
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [ROUNDS]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
ROUNDS=${2:-15}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
for f in libncclbpf.so p2p_empty.bpf.o p2p_count.bpf.o; do
	[ -e "$ART/$f" ] || { echo "gpu-profiler-cost: $ART/$f is missing (testhost/gpu/build-art.sh ART)" >&2; exit 2; }
done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_DEBUG=WARN
unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCLBPF_POLICY
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CUDA_HOME=$CUDA_HOME "$ROOT/scripts/build.sh" nccl-p2p "$W/nccl_p2p"
L=$ART/libncclbpf.so
cfgs=(noplugin none empty count)
for r in $(seq "$ROUNDS"); do
	for c in "${cfgs[@]}"; do
		case $c in
		noplugin) e=() ;;
		none) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY=none) ;;
		empty) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_empty.bpf.o") ;;
		count) e=(NCCL_TUNER_PLUGIN="$L" NCCL_PROFILER_PLUGIN="$L" NCCLBPF_POLICY="$ART/p2p_count.bpf.o") ;;
		esac
		out=$(env "${e[@]}" timeout 90 "$W/nccl_p2p" bench 2000 7 4096 0) ||
			{ echo "gpu-profiler-cost: round $r, $c failed" >&2; exit 1; }
		v=$(grep -o '"us_per_group":\[[^]]*\]' <<<"$out" | sed 's/.*\[//; s/\]//' | tr ',' '\n' | sort -g |
			awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
		echo "$r $c $v"
	done
done | tee "$W/rounds.txt" # each round as it completes: a run cut short keeps its rounds
echo "µs per 4 KiB send + recv-to-self group (median block of each round), $ROUNDS rounds:"
for c in "${cfgs[@]}"; do
	printf '  %-9s %s\n' "$c" "$(awk -v c="$c" '$2 == c {printf "%s ", $3}' "$W/rounds.txt")"
done
med() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for c in "${cfgs[@]}"; do
	printf '  median %-9s %s\n' "$c" "$(awk -v c="$c" '$2 == c {print $3}' "$W/rounds.txt" | med)"
done
for p in "none noplugin" "empty none" "count none" "count empty" "count noplugin"; do
	set -- $p
	printf '  %s / %s: median of the rounds'"'"' ratios %s\n' "$1" "$2" "$(awk -v a="$1" -v b="$2" \
		'{v[$1 " " $2] = $3; n = $1} END {for (r = 1; r <= n; r++) printf "%.4f\n", v[r " " a] / v[r " " b]}' \
		"$W/rounds.txt" | med)"
done

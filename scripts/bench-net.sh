#!/usr/bin/env bash
# bench-net.sh ART [PAIRS] [RUNS] [LABEL=LIB ...]: the net wrapper's cost per isend + test pair
# (BENCHMARKS.md, "Net wrapper"). RUNS (8) runs of testhost/net_host's bench, each one process with
# 21 interleaved rounds of PAIRS (200000) pairs per configuration: the inner plugin called directly,
# the wrapper without a program, with the counting policy testhost/net_count_a.bpf.o and with the
# timing one testhost/net_timing_times.bpf.o; plus a test call on a request not done yet (NCCL polls
# each request many times). Each configuration's added cost is wrapper minus direct in the same round,
# by the thread's CPU time, median over the rounds; the summary gives min, median and max of those
# over the runs. With LABEL=LIB arguments, each LIB (a libncclbpf-testing.so) is measured instead of
# ART's, the runs interleaved, with ART's net_host and test plugin: libraries side by side.
# Builds nothing: ART comes from testhost/gpu/build-art.sh (libncclbpf-testing.so: the bench unloads
# and reloads through the test entry points; net_host, libnccl-net-tcpnet.so). About 1.5 s a run and
# library with the defaults. Run from anywhere (the policies are read from testhost/).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [PAIRS] [RUNS] [LABEL=LIB ...]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
PAIRS=${2:-200000}
RUNS=${3:-8}
shift $(($# < 3 ? $# : 3))
LIBS=()
if [ $# -eq 0 ]; then
	LIBS=("wrapper=$ART/libncclbpf-testing.so")
else
	for l in "$@"; do
		case $l in *=*) ;; *) echo "bench-net: $l: want LABEL=LIB" >&2; exit 2 ;; esac
		[ -f "${l#*=}" ] || { echo "bench-net: ${l#*=}: no such library" >&2; exit 2; }
		LIBS+=("${l%%=*}=$(cd "$(dirname "${l#*=}")" && pwd)/$(basename "${l#*=}")")
	done
fi
cd "$(dirname "$0")/.."
LOG=$(mktemp)
ALL=$(mktemp)
trap 'rm -f "$LOG" "$ALL"' EXIT
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$PAIRS pairs a round, 21 rounds a run; ns per isend + test pair, median over the rounds of each run"
printf '%-4s %-10s %8s | %8s %9s %8s | %13s | %10s\n' run library direct added: counting timing "test not done" "two clocks"
printf '%-4s %-10s %8s | %8s %9s %8s | %13s | %10s\n' "" "" "" noprog "" "" added ""
for r in $(seq "$RUNS"); do
	for l in "${LIBS[@]}"; do
		label=${l%%=*} lib=${l#*=}
		NCCLBPF_CONTROL=0 TCPNET_NULL=1 NCCLBPF_NET_PLUGIN="$ART/libnccl-net-tcpnet.so" \
			NCCLBPF_POLICY=testhost/net_count_a.bpf.o \
			"$ART/net_host" bench "$lib" "$ART/libnccl-net-tcpnet.so" "$PAIRS" 21 \
			testhost/net_count_a.bpf.o testhost/net_timing_times.bpf.o >"$LOG" 2>&1 ||
			{ cat "$LOG" >&2; exit 1; }
		awk -v r="$r" -v lib="$label" '
			$1 == "bench" && $2 == "cfg" { for (i = 4; i < NF; i += 2) v[$3 "." $i] = $(i + 1) }
			$1 == "bench" && $2 == "two_clock_reads_ns" { clk = $3 }
			END {
				printf "%-4s %-10s %8s | %8s %9s %8s | %13s | %10s\n", r, lib, v["noprog.direct_ns"],
					v["noprog.added_ns"], v["net_count_a.added_ns"], v["net_timing_times.added_ns"],
					v["net_count_a.notdone_added_ns"], clk
				printf "%s noprog %s\n%s counting %s\n%s timing %s\n%s test_not_done %s\n", lib,
					v["noprog.added_ns"], lib, v["net_count_a.added_ns"], lib, v["net_timing_times.added_ns"],
					lib, v["net_count_a.notdone_added_ns"] > "/dev/stderr"
			}' "$LOG" 2>>"$ALL"
	done
done
echo
echo "added ns per pair over the $RUNS runs (each run's median):"
printf '%-10s %-14s %8s %8s %8s\n' library configuration min median max
for l in "${LIBS[@]}"; do
	label=${l%%=*}
	for c in noprog counting timing test_not_done; do
		awk -v lib="$label" -v c="$c" '$1 == lib && $2 == c { print $3 }' "$ALL" | sort -g | awk -v lib="$label" -v c="$c" '
			{ v[NR] = $1 }
			END {
				m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "%-10s %-14s %8.1f %8.1f %8.1f\n", lib, c, v[1], m, v[NR]
			}'
	done
done
for l in "${LIBS[@]}"; do
	label=${l%%=*}
	awk -v lib="$label" '$1 == lib && $2 == "counting" { print $3 }' "$ALL" | sort -g | awk -v lib="$label" '
		{ v[NR] = $1 }
		END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s: the counting policy adds %.1f ns per isend + test (median of %d runs; worst run %.1f)\n",
				lib, m, NR, v[NR]
		}'
done

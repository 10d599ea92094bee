#!/usr/bin/env bash
# bench-net.sh ART [PAIRS] [RUNS]: the net wrapper's cost per isend + test pair (BENCHMARKS.md, "Net
# wrapper"), RUNS (3) runs of testhost/net_host's bench, PAIRS (2000000) pairs a round: the inner
# plugin called directly, the wrapper without a program, the wrapper with the counting policy
# testhost/net_count_a.bpf.o and with the timing one testhost/net_timing_times.bpf.o, interleaved
# rounds, medians. Builds nothing: ART comes from testhost/gpu/build-art.sh (libncclbpf-testing.so: the
# bench unloads and reloads through the test entry points; net_host, libnccl-net-tcpnet.so). Run from
# the repository root (the policies are read from testhost/).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [PAIRS] [RUNS]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
PAIRS=${2:-2000000}
RUNS=${3:-3}
cd "$(dirname "$0")/.."
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %-4s %10s %12s %12s %14s %14s %12s\n' policy run direct_ns noprog_ns prog_ns added_noprog added_prog two_clocks
for pol in net_count_a net_timing_times; do
	for r in $(seq "$RUNS"); do
		NCCLBPF_CONTROL=0 TCPNET_NULL=1 NCCLBPF_NET_PLUGIN="$ART/libnccl-net-tcpnet.so" \
			NCCLBPF_POLICY="testhost/$pol.bpf.o" \
			"$ART/net_host" bench "$ART/libncclbpf-testing.so" "$ART/libnccl-net-tcpnet.so" "$PAIRS" >"$LOG" 2>&1 ||
			{ cat "$LOG" >&2; exit 1; }
		awk -v p="$pol" -v r="$r" '$1 == "bench" {v[$2] = $3}
				END {printf "%-16s %-4s %10s %12s %12s %14s %14s %12s\n", p, r, v["direct_ns"], v["wrapper_noprog_ns"],
					v["wrapper_count_ns"], v["added_noprog_ns"], v["added_count_ns"], v["two_clock_reads_ns"]}' "$LOG"
	done
done

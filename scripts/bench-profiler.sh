#!/usr/bin/env bash
# Profiler benchmark (BENCHMARKS.md, "Profiler: cost per event"): testhost/profiler_host's bench, one
# communicator, profiler v5, 30 short rounds of 20000 collectives per program, best round kept. The
# program in the coll_end slot alternates in one process: latency_stats JIT-compiled from its
# bundle, the same logic compiled natively, an empty program published as reading what
# latency_stats reads (times, GPU span), and one published as reading nothing (what the verifier
# finds for an empty eBPF program). "added" is ns per profiler call over a plugin that does nothing.
#
#   scripts/bench-profiler.sh [BUILD_DIR [BASELINE [RUNS]]]
#
# BUILD_DIR (default: build in the checkout) holds libncclbpf-testing.so (the library with every symbol
# exported: the host publishes programs through the shim's own entry points) and profiler-host; a
# missing one is built (scripts/build.sh); BUILD=1 rebuilds both. BASELINE: another libncclbpf.so, or a git
# revision whose library is then built into BUILD_DIR/base (Go, from `git archive`). With a baseline,
# RUNS (3) runs of each library alternate, and the medians are printed side by side. Builds nothing
# that needs the network when both libraries and the host are there. Run from anywhere; reads the
# policy from the checkout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build}
BASE=${2:-}
RUNS=${3:-3}
mkdir -p "$B"
B=$(cd "$B" && pwd)                                          # paths as given, from the caller's folder
if [ -f "$BASE" ]; then BASE=$(cd "$(dirname "$BASE")" && pwd)/$(basename "$BASE"); fi
cd "$ROOT"
if [ -n "${BUILD:-}" ] || [ ! -e "$B/libncclbpf-testing.so" ]; then
	scripts/build.sh lib-testing "$B/libncclbpf-testing.so"
fi
if [ -n "${BUILD:-}" ] || [ ! -x "$B/profiler-host" ]; then
	scripts/build.sh profiler-host "$B/profiler-host"
fi
if [ -n "$BASE" ] && [ ! -f "$BASE" ]; then
	rev=$BASE
	BASE=$(cd "$B" && pwd)/base/libncclbpf.so
	if [ -n "${BUILD:-}" ] || [ ! -e "$BASE" ]; then
		src=$(mktemp -d)
		git archive "$rev" | tar -x -C "$src"
		mkdir -p "$B/base"
		# the baseline's sources with this tree's recipe: the two libraries differ in code only
		cp scripts/build.sh "$src/scripts/build.sh"
		"$src/scripts/build.sh" lib-testing "$BASE"
		rm -rf "$src"
		echo "baseline: $rev ($(git rev-parse --short "$rev")) built into $BASE"
	fi
fi
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then PIN=(taskset -c "$(($(nproc) - 1))"); fi
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)${PIN:+, pinned to CPU $(($(nproc) - 1))}"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
run() { # run LIB: one bench into $LOG
	NCCLBPF_CONTROL=0 NCCLBPF_POLICY="$PWD/policies/latency_stats/latency_stats.bpf.o" \
		"${PIN[@]}" "$B/profiler-host" bench "$1" >"$LOG" 2>&1 || { cat "$LOG" >&2; exit 1; }
}
libs=("$B/libncclbpf-testing.so")
names=(this)
if [ -n "$BASE" ]; then libs+=("$BASE"); names+=(baseline); else RUNS=1; fi
ALL=$(mktemp)
trap 'rm -f "$LOG" "$ALL"' EXIT
for r in $(seq "$RUNS"); do
	for i in "${!libs[@]}"; do
		run "${libs[$i]}"
		# "bench NAME: X ns/call, Y ns/collective, N calls/collective, mask M, needs F; added by the plugin: A ns/call"
		sed -n 's/^bench \([^:]*\): \([0-9.]*\) ns\/call, \([0-9.]*\) ns\/collective, \([0-9]*\) calls\/collective, mask \([0-9a-fx]*\), needs \([0-9a-fx]*\); added by the plugin: \([0-9.-]*\) ns\/call$/\1|\2|\3|\4|\5|\6|\7/p' "$LOG" |
			awk -v lib="${names[$i]}" -v r="$r" -F'|' '{print lib "|" r "|" $0}' >>"$ALL"
	done
done
printf '%-9s %-4s %-62s %9s %11s %5s %6s %6s %9s\n' library run program ns/call ns/coll calls mask needs added/call
awk -F'|' '{printf "%-9s %-4s %-62s %9s %11s %5s %6s %6s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}' "$ALL"
echo
echo "medians over $RUNS run(s), ns per profiler call added over a plugin that does nothing:"
awk -F'|' '
function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ v[$1 "|" $3] = v[$1 "|" $3] " " $9; c[$1 "|" $3] = $6; if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 } }
END {
	printf "  %-62s %10s %10s %8s\n", "program", "this", "baseline", "ratio"
	for (i = 1; i <= n; i++) {
		p = order[i]; t = ("this|" p) in v ? median(v["this|" p]) : ""; b = ("baseline|" p) in v ? median(v["baseline|" p]) : ""
		printf "  %-62s %10s %10s %8s\n", p " (" c["this|" p] " calls/coll)", t == "" ? "-" : sprintf("%.1f", t),
			b == "" ? "-" : sprintf("%.1f", b), (t != "" && b != "" && b > 0) ? sprintf("%.2f", t / b) : "-"
	}
}' "$ALL"

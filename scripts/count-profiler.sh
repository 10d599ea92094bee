#!/usr/bin/env bash
# Instructions and locked instructions per profiler call (BENCHMARKS.md, "Profiler: cost per event"):
# testhost/profiler_host's `calls` scenario (task start and stop, an empty coll_end program that reads
# nothing, mask 0x2) under callgrind, counting only inside startEvent and stopEvent (start_v56,
# stop_event and what they call). Two runs, N and 2N collectives: the difference is the per-call cost,
# free of set-up. Every executed instruction of the library with a lock prefix, an xchg, a fence or a
# call into the clock is listed with its count per call.
#
#   scripts/count-profiler.sh [LIB [N [timed]]]   LIB default build/libncclbpf.so (built if missing), N 1000
#
# timed: the empty program reads the times (what latency_stats reads): each collective then also has 2
# kernel channels with GPU stamps (start, record, stop each), 8 calls a collective.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIB=${1:-$ROOT/build/libncclbpf-testing.so}
N=${2:-1000}
MODE=${3:-}
PER=2
if [ "$MODE" = timed ]; then PER=8; elif [ -n "$MODE" ]; then echo "count-profiler.sh: mode '$MODE': want timed or nothing" >&2; exit 2; fi
case "$LIB" in /*) ;; *) LIB=$PWD/$LIB ;; esac
cd "$ROOT"
if [ ! -e "$LIB" ]; then
	scripts/build.sh lib-testing "$LIB"
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
scripts/build.sh profiler-host "$T/host"
cg() { # cg N OUT
	GODEBUG=asyncpreemptoff=1 NCCLBPF_CONTROL=0 NCCLBPF_POLICY=none valgrind --tool=callgrind --dump-instr=yes \
		--compress-pos=no --compress-strings=no --toggle-collect=start_v56 --toggle-collect=stop_event \
		--toggle-collect=record_v46 --callgrind-out-file="$2" "$T/host" calls "$LIB" "$1" $MODE >/dev/null 2>"$2.log" || { cat "$2.log" >&2; exit 1; }
}
cg "$N" "$T/a"
cg $((2 * N)) "$T/b"
objdump -d --no-show-raw-insn "$LIB" | awk '/^ +[0-9a-f]+:/ {a=$1; sub(":","",a); $1=""; print a "\t" $0}' >"$T/dis"
# per (object, address): executed count in each run (positions: instr line). A calls= line's next line is
# the call's inclusive cost, and a line for the call instruction itself may follow it again: counted once.
parse() {
	awk -v lib="$(basename "$LIB")" '
		skip { skip = 0; again = $1; next }
		again != "" && $1 == again { again = ""; next }
		{ again = "" }
		/^ob=/ { ob = substr($0, 4); n = split(ob, parts, "/"); ob = parts[n]; next }
		/^fn=/ { fn = substr($0, 4); next }
		/^calls=/ { skip = 1; next }
		/^0x[0-9a-f]+ [0-9]+ [0-9]+/ { tot += $3; if (ob == lib) { a = substr($1, 3); sub(/^0+/, "", a); c[a] += $3; f[a] = fn } }
		END { print "total", tot; for (a in c) print a, c[a], f[a] }' "$1"
}
parse "$T/a" >"$T/pa"
parse "$T/b" >"$T/pb"
calls=$((PER * N)) # the difference: N collectives
echo "library: $LIB; $N collectives ($PER calls each) between a run of $N and one of $((2 * N))"
awk -v calls="$calls" -v n="$N" '
	FILENAME == ARGV[1] { if ($1 == "total") ta = $2; else ca[$1] = $2; next }
	FILENAME == ARGV[2] { if ($1 == "total") tb = $2; else { cb[$1] = $2; fb[$1] = $3 } next }
	{ a = $1; sub(/^0+/, "", a); ins = $0; sub(/^[^\t]*\t */, "", ins); d[a] = ins }
	END {
		printf "instructions per call: %.1f (per collective: %.1f)\n", (tb - ta) / calls, (tb - ta) / n
		lk = 0
		for (a in cb) {
			k = cb[a] - ca[a]; ins = d[a]
			if (k > 0 && (ins ~ /^lock / || ins ~ /xchg.*\(/ || ins ~ /fence/ || ins ~ /clock_gettime|rdtsc/)) {
				printf "  %6.3f per call  %-24s %s  %s\n", k / calls, fb[a], a, ins
				if (ins ~ /^lock / || ins ~ /xchg.*\(/) lk += k
			}
		}
		printf "locked instructions per call: %.3f\n", lk / calls
	}' "$T/pa" "$T/pb" "$T/dis"

#!/usr/bin/env bash
# Instructions per hot-path call of several libncclbpf.so builds side by side, in one run (callgrind,
# exact): the tuner's getCollInfo (../shared/bench/tunerbench, counted inside nb_get_coll_info; noop,
# size_aware, rules with 100 rules), the net wrapper's isend + test pair (testhost/net_host pairs over
# tcpnet, counted inside w_isend and w_test; no program, counting, timing) and the profiler
# (scripts/count-profiler.sh, plain and timed). Each figure is the difference of a run of 2N and one of N.
# The profiler rows drive the library through its test entry points: they count LIB's test build,
# LIB with -testing before .so (scripts/build.sh lib-testing), and say so when it is missing.
#
#   scripts/count-hotpaths.sh LIB...     TOOLS (default /tmp/tools) holds tunerbench, net_host,
#   libnccl-net-tcpnet.so and rules100.conf, built by the one recipe:
#     scripts/build.sh tunerbench $TOOLS/tunerbench; scripts/build.sh net-host $TOOLS/net_host
#     scripts/build.sh tcpnet $TOOLS/libnccl-net-tcpnet.so; scripts/build.sh host $TOOLS/tuner-host
#     $TOOLS/tuner-host genrules 100 $TOOLS/rules100.conf
# GODEBUG cpu.rdtscp=off: valgrind 3.19 does not decode the Go runtime's RDTSCP.
set -uo pipefail
T=${TOOLS:-/tmp/tools}; cd "$(dirname "$0")/.."
cgrun() { # cgrun TOGGLES... -- CMD...: total Ir collected; retried when valgrind trips on the Go runtime's rdtscp
	local tog=() ; while [ "$1" != -- ]; do tog+=(--toggle-collect=$1); shift; done; shift
	for try in 1 2 3 4 5 6; do
		if env $CGENV valgrind --tool=callgrind "${tog[@]}" --callgrind-out-file=$T/cg.$$ "$@" >/dev/null 2>$T/cg.log; then
			awk '/^(summary|totals):/ {print $2; exit}' $T/cg.$$; rm -f $T/cg.$$; return; fi
	done; echo "FAILED" >&2; echo 0
}
for L in "$@"; do
	echo "== $L"
	for p in "noop:NCCLBPF_POLICY=builtin:noop" "size_aware:NCCLBPF_POLICY=builtin:size_aware" "rules100:NCCLBPF_POLICY=builtin:rules NCCLBPF_RULES_FILE=$T/rules100.conf"; do
		e="GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off NCCLBPF_CONTROL=0 ${p#*:}"
		CGENV=$e; a=$(cgrun nb_get_coll_info -- $T/tunerbench "$L" 100000 1); b=$(cgrun nb_get_coll_info -- $T/tunerbench "$L" 200000 1)
		echo "tuner ${p%%:*}: $(awk -v a=$a -v b=$b 'BEGIN{printf "%.2f", (b-a)/100000}') instructions per getCollInfo (inside the plugin)"
	done
	for p in none testhost/net_count_a.bpf.o testhost/net_timing_times.bpf.o; do
		e="GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off NCCLBPF_CONTROL=0 TCPNET_NULL=1 NCCLBPF_NET_PLUGIN=$T/libnccl-net-tcpnet.so NCCLBPF_POLICY=$p"
		CGENV=$e; a=$(cgrun w_isend w_test -- $T/net_host pairs "$L" 20000); b=$(cgrun w_isend w_test -- $T/net_host pairs "$L" 120000)
		echo "net $p: $(awk -v a=$a -v b=$b 'BEGIN{printf "%.2f", (b-a)/100000}') instructions per isend+test pair (inside the wrapper, inner plugin included)"
	done
	LT=${L%.so}-testing.so
	for m in "1000" "500 timed"; do
		if [ ! -e "$LT" ]; then
			echo "profiler ($m): not counted: no $LT (scripts/build.sh lib-testing $LT, from the same tree)"
			continue
		fi
		out=FAILED
		for try in 1 2 3 4 5 6; do out=$(scripts/count-profiler.sh "$LT" $m 2>&1) && break || out="FAILED: $(tail -1 <<<"$out")"; done
		echo "profiler ($m, $(basename "$LT")): $(grep -E 'per call:|locked instructions|^FAILED' <<<"$out" | tr '\n' ' ')"
	done
done

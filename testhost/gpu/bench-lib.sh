# bench-lib.sh, sourced by scripts/gpu-tuner-cost.sh and scripts/gpu-profiler-cost.sh: pinning, the
# bench programs' JSON fields, and the summaries of rounds.
#
# bench_pin N gives each of N timed threads a core of its own and the rest of the process the CPUs left.
# It picks N cores from the highest-numbered CPU down, never CPU 0's core (interrupts, the
# shell), one CPU per core, and exports NCCL_BENCH_CPUS (the picked CPUs, comma-separated: the
# bench programs pin their calling thread to one after communicator init, testhost/gpu/bench_cpu.h).
# BENCH_RUN becomes `taskset -c REST`, REST being every online CPU that is not a picked one or a
# hyperthread sibling of one: a command run under it (NCCL's proxy threads, CUDA's threads, an MPS
# server) never shares a core with a timed thread. With PIN=0, without taskset, or with too few
# cores, nothing is pinned and it says why. BENCH_SYSCPU (default /sys/devices/system/cpu) lets a
# test hand it a made-up topology.

# bench_cpu_list: the numbers of a sysfs CPU list ("0-3,8,10-11"), one per line.
bench_cpu_list() { tr ',' '\n' <<<"$1" | while IFS=- read -r a b; do [ -n "$a" ] && seq "$a" "${b:-$a}"; done; }

bench_siblings() {
	local f=$BENCH_SYSCPU/cpu$1/topology/thread_siblings_list
	echo " $(bench_cpu_list "$(cat "$f" 2>/dev/null || echo "$1")" | tr '\n' ' ')"
}

bench_pin() {
	local n=$1 taken=" " cpu0 c x clash sib
	local -a picked=() rest=()
	BENCH_SYSCPU=${BENCH_SYSCPU:-/sys/devices/system/cpu}
	BENCH_RUN=()
	unset NCCL_BENCH_CPUS
	if [ "${PIN:-1}" != 1 ]; then
		echo "bench-lib: PIN=${PIN}: not pinned"
		return 0
	fi
	if ! command -v taskset >/dev/null || [ ! -r "$BENCH_SYSCPU/online" ]; then
		echo "bench-lib: no taskset or no $BENCH_SYSCPU/online: not pinned" >&2
		return 0
	fi
	cpu0=$(bench_siblings 0)
	for c in $(bench_cpu_list "$(cat "$BENCH_SYSCPU/online")" | sort -rn); do
		[ "${#picked[@]}" -lt "$n" ] || break
		case "$cpu0" in *" $c "*) continue ;; esac
		sib=$(bench_siblings "$c")
		clash=0
		for x in $sib; do case "$taken" in *" $x "*) clash=1 ;; esac; done
		[ "$clash" = 0 ] || continue
		picked+=("$c")
		taken="$taken${sib# }"
	done
	for c in $(bench_cpu_list "$(cat "$BENCH_SYSCPU/online")"); do
		case "$taken" in *" $c "*) ;; *) rest+=("$c") ;; esac
	done
	if [ "${#picked[@]}" -lt "$n" ] || [ "${#rest[@]}" -lt 1 ]; then
		echo "bench-lib: too few cores to give $n timed threads a core each and keep one for the rest: not pinned" >&2
		return 0
	fi
	NCCL_BENCH_CPUS=$(IFS=,; echo "${picked[*]}")
	export NCCL_BENCH_CPUS
	BENCH_RUN=(taskset -c "$(IFS=,; echo "${rest[*]}")")
	echo "bench-lib: timed threads on CPUs $NCCL_BENCH_CPUS; the rest on ${rest[*]}"
}

# bench_field NAME: the number NAME has in the JSON line of $BENCH_OUT (a bench program's output), or -.
bench_field() {
	local v
	v=$(grep -o "\"$1\":[0-9.]*" <<<"$BENCH_OUT" | head -1 | cut -d: -f2)
	echo "${v:--}"
}

# bench_med: the median of the numbers on stdin, one a line (the lower middle one of an even count).
bench_med() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# bench_summary FILE COL TITLE: of round lines "ROUND CONFIG VALUES..." in FILE, column COL: each
# configuration of BENCH_CFGS with its rounds and their median, then for each "A B" of BENCH_PAIRS
# the median over rounds of each round's A / B.
bench_summary() {
	local f=$1 col=$2 c p
	echo "$3, $(awk 'END {print $1}' "$f") rounds:"
	for c in "${BENCH_CFGS[@]}"; do
		printf '  %-10s %s\n' "$c" "$(awk -v c="$c" -v k="$col" '$2 == c {printf "%s ", $k}' "$f")"
	done
	for c in "${BENCH_CFGS[@]}"; do
		printf '  median %-10s %s\n' "$c" "$(awk -v c="$c" -v k="$col" '$2 == c {print $k}' "$f" | bench_med)"
	done
	for p in "${BENCH_PAIRS[@]}"; do
		set -- $p
		printf '  %s / %s: median of the rounds'"'"' ratios %s\n' "$1" "$2" "$(awk -v a="$1" -v b="$2" -v k="$col" \
			'{v[$1 " " $2] = $k; n = $1} END {for (r = 1; r <= n; r++) printf "%.4f\n", v[r " " b] ? v[r " " a] / v[r " " b] : 0}' \
			"$f" | bench_med)"
	done
}

# bench_report FILE TITLE UNIT: bench_summary of the time (column 3), then, where every run counted
# them, of the calling thread's user-space instructions (4) and cycles (5) per UNIT.
bench_report() {
	bench_summary "$1" 3 "$2"
	if awk '$4 == "-" {bad = 1} END {exit !bad}' "$1"; then
		echo "(no instruction counts: this machine's CPU has no performance counters for the process)"
		return
	fi
	bench_summary "$1" 4 "User-space instructions per $3, calling thread"
	bench_summary "$1" 5 "User-space cycles per $3, calling thread"
}

# bench_medians FILE FIRST LAST CONFIG...: per configuration, the median over its rounds of each
# column FIRST..LAST, on one line.
bench_medians() {
	local f=$1 first=$2 last=$3 c k line
	shift 3
	for c in "$@"; do
		line=""
		for k in $(seq "$first" "$last"); do line="$line $(awk -v c="$c" -v k="$k" '$2 == c {print $k}' "$f" | bench_med)"; done
		echo "  median over $(awk -v c="$c" '$2 == c {n++} END {print n}' "$f") rounds, $c:$line"
	done
}

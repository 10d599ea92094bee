# bench-pin.sh, sourced by scripts/gpu-tuner-cost.sh and scripts/gpu-profiler-cost.sh: bench_pin N
# gives each of N timed threads a core of its own and the rest of the process the CPUs left.
#
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
		echo "bench-pin: PIN=${PIN}: not pinned"
		return 0
	fi
	if ! command -v taskset >/dev/null || [ ! -r "$BENCH_SYSCPU/online" ]; then
		echo "bench-pin: no taskset or no $BENCH_SYSCPU/online: not pinned" >&2
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
		echo "bench-pin: too few cores to give $n timed threads a core each and keep one for the rest: not pinned" >&2
		return 0
	fi
	NCCL_BENCH_CPUS=$(IFS=,; echo "${picked[*]}")
	export NCCL_BENCH_CPUS
	BENCH_RUN=(taskset -c "$(IFS=,; echo "${rest[*]}")")
	echo "bench-pin: timed threads on CPUs $NCCL_BENCH_CPUS; the rest on ${rest[*]}"
}

#!/usr/bin/env bash
# rules with 100 rules against NCCL's example CSV tuner (BENCHMARKS.md), side by side in one run:
#   none, noop (NEW_LIB), rules with OLD_LIB (a build to compare with; optional) and NEW_LIB, and the
#   example tuner, in an independent getCollInfo harness (TUNERBENCH: its C source, built here by
#   scripts/build.sh; both TB_FILL modes; ROUNDS alternating rounds of 201 short batches each; per configuration
#   the median of the rounds' medians and the smallest batch) and in the C test host's bench.
# Usage: TUNERBENCH=tunerbench.c EXAMPLE_TUNER=libnccl-tuner-example.so [OLD_LIB=...] [NEW_LIB=...]
#        [ROUNDS=7] [OUT=build/bench] scripts/bench-rules.sh
# NEW_LIB defaults to build/libncclbpf.so (scripts/build.sh lib-testing).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TUNERBENCH:?set TUNERBENCH to the harness source}" "${EXAMPLE_TUNER:?set EXAMPLE_TUNER to the example tuner library}"
NEW_LIB=${NEW_LIB:-build/libncclbpf.so}
OLD_LIB=${OLD_LIB:-}
ROUNDS=${ROUNDS:-7}
W=${OUT:-build/bench}
R=$W/rules100.conf
mkdir -p "$W"
PIN="taskset -c $(($(nproc) - 1))"
$PIN true 2>/dev/null || PIN=""
SHARED_BENCH=$(dirname "$TUNERBENCH") scripts/build.sh tunerbench "$W/tunerbench"
scripts/build.sh host "$W/tuner-host"
"$W/tuner-host" genrules 100 "$R"
cfgs=("none|none|" "noop|$NEW_LIB|NCCLBPF_POLICY=builtin:noop")
hcfgs=(none "noop=$NEW_LIB:NCCLBPF_POLICY=builtin:noop")
if [ -n "$OLD_LIB" ]; then
	cfgs+=("rules-old|$OLD_LIB|NCCLBPF_POLICY=builtin:rules NCCLBPF_RULES_FILE=$R")
	hcfgs+=("rules-old=$OLD_LIB:NCCLBPF_POLICY=builtin:rules;NCCLBPF_RULES_FILE=$R")
fi
cfgs+=("rules|$NEW_LIB|NCCLBPF_POLICY=builtin:rules NCCLBPF_RULES_FILE=$R"
	"example|$EXAMPLE_TUNER|NCCL_TUNER_CONFIG_FILE=$R")
hcfgs+=("rules=$NEW_LIB:NCCLBPF_POLICY=builtin:rules;NCCLBPF_RULES_FILE=$R" "example=$EXAMPLE_TUNER:NCCL_TUNER_CONFIG_FILE=$R")
for fill in memcpy scalar; do
	out=$(mktemp)
	for ((r = 0; r < ROUNDS; r++)); do
		for c in "${cfgs[@]}"; do
			IFS='|' read -r name lib envs <<<"$c"
			n=20000
			if [ "$name" = example ]; then n=2000; fi
			# shellcheck disable=SC2086 # envs holds NAME=VALUE words
			echo "$name $($PIN env TB_FILL=$fill $envs "$W/tunerbench" "$lib" $n 201)" >>"$out"
		done
	done
	echo "== tunerbench, TB_FILL=$fill, $ROUNDS rounds: ns/call (median of medians, smallest batch), checksum"
	awk '{sub(/,/, "", $7); print $1, $4, $7, $NF}' "$out" | sort -k1,1 -k2,2g | awk '
		{ med[$1] = med[$1] " " $2; if (!($1 in mn) || $3 < mn[$1]) mn[$1] = $3; ck[$1] = $4; n[$1]++ }
		END { for (k in med) { split(substr(med[k], 2), a, " ")
			printf "%-10s %8.2f %8.2f  %s\n", k, a[int((n[k] + 1) / 2)], mn[k], ck[k] } }' | sort
	rm -f "$out"
done
echo "== testhost/host.c bench"
HOST_BENCH_ROUNDS=5 $PIN "$W/tuner-host" bench "${hcfgs[@]}"

#!/usr/bin/env bash
# Tuner cost in the independent harness (../shared/bench/tunerbench.c, see its README), side by
# side in one run: for each fill mode of the cost table (template: one memcpy; scalar: cell by
# cell, as NCCL's cost model fills it), ROUNDS rounds that alternate the configurations
#   none        the harness loop alone
#   native      the harness's native C plugin with size_aware's logic
#   noop, size_aware, rules100   libncclbpf.so with the embedded policies (100 generated rules)
#   example100  NCCL's example CSV tuner with the same rules, when ART/libnccl-tuner-example.so is
#               there (built from NVIDIA/nccl's ext-tuner/example; never part of this repository)
#   base-*      the same three policies with ART/base/libncclbpf.so, when it is there (another
#               build, for figures side by side)
# and prints, per mode, the median over rounds of each configuration's median ns/call, the ratios
# the goals are stated in, and the decision checksums (equal checksums: equal decisions).
#
# Usage: scripts/bench-harness.sh ART [CALLS] [BATCHES] [ROUNDS]
#   ART holds tunerbench, libharness-native.so, libncclbpf.so and rules100.conf
#   (testhost/gpu/build-art.sh ART builds them when ../shared/bench is beside the checkout).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [CALLS] [BATCHES] [ROUNDS]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
CALLS=${2:-2000000}
BATCHES=${3:-9}
ROUNDS=${4:-5}
for f in tunerbench libharness-native.so libncclbpf.so rules100.conf; do
	[ -e "$ART/$f" ] || { echo "bench-harness: $ART/$f is missing (testhost/gpu/build-art.sh ART builds it)" >&2; exit 2; }
done
L="$ART/libncclbpf.so"
names=(none native noop size_aware rules100)
declare -A plug envs
plug[none]=none
plug[native]="$ART/libharness-native.so"
plug[noop]=$L; envs[noop]="NCCLBPF_POLICY=builtin:noop"
plug[size_aware]=$L; envs[size_aware]="NCCLBPF_POLICY=builtin:size_aware"
plug[rules100]=$L; envs[rules100]="NCCLBPF_POLICY=builtin:rules NCCLBPF_RULES_FILE=$ART/rules100.conf"
# A baseline library (another build, for side-by-side figures): ART/base/libncclbpf.so.
if [ -e "$ART/base/libncclbpf.so" ]; then
	B="$ART/base/libncclbpf.so"
	names+=(base-noop base-size_aware base-rules100)
	plug[base-noop]=$B; envs[base-noop]="NCCLBPF_POLICY=builtin:noop"
	plug[base-size_aware]=$B; envs[base-size_aware]="NCCLBPF_POLICY=builtin:size_aware"
	plug[base-rules100]=$B; envs[base-rules100]="NCCLBPF_POLICY=builtin:rules NCCLBPF_RULES_FILE=$ART/rules100.conf"
fi
if [ -e "$ART/libnccl-tuner-example.so" ]; then
	names+=(example100)
	plug[example100]="$ART/libnccl-tuner-example.so"
	envs[example100]="NCCL_TUNER_CONFIG_FILE=$ART/rules100.conf"
fi
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "bench-harness: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; $CALLS calls x $BATCHES batches, $ROUNDS rounds"
for mode in template scalar; do
	declare -A got=() sum=()
	for r in $(seq "$ROUNDS"); do
		for n in "${names[@]}"; do
			out=$(env TB_FILL=$mode ${envs[$n]:-} "$ART/tunerbench" "${plug[$n]}" "$CALLS" "$BATCHES" 2>/dev/null) ||
				{ echo "bench-harness: $n failed" >&2; exit 1; }
			got[$n]+="$(sed -n 's/.*median \([0-9.]*\) ns.*/\1/p' <<<"$out") "
			sum[$n]=$(sed -n 's/.*checksum \([0-9]*\).*/\1/p' <<<"$out")
		done
	done
	echo
	echo "TB_FILL=$mode: median of $ROUNDS rounds (ns/call; all rounds in brackets; decision checksum)"
	declare -A m=()
	for n in "${names[@]}"; do
		m[$n]=$(tr ' ' '\n' <<<"${got[$n]}" | grep . | median)
		printf '  %-11s %7.2f  [%s]  checksum %s\n' "$n" "${m[$n]}" "${got[$n]% }" "${sum[$n]}"
	done
	awk -v none="${m[none]}" -v nat="${m[native]}" -v noop="${m[noop]}" -v sa="${m[size_aware]}" \
		-v r100="${m[rules100]}" -v ex="${m[example100]:-}" -v bn="${m[base-noop]:-}" -v bs="${m[base-size_aware]:-}" \
		-v br="${m[base-rules100]:-}" 'BEGIN {
		printf "  size_aware / native = %.2f (goal <= 1.5)\n", sa / nat
		printf "  noop - none = %+.2f ns (goal <= +2)\n", noop - none
		if (ex != "") printf "  example100 / rules100 = %.1f (goal >= 20)\n", ex / r100
		if (bn != "") printf "  this / base: noop %.2f, size_aware %.2f, rules100 %.2f\n", noop / bn, sa / bs, r100 / br
	}'
done

#!/usr/bin/env bash
# footprint.sh ART [N]: what loading a tuner plugin costs a host process, for four configurations side by
# side, alternating, N rounds (15): the native C plugin (testhost/native_size_aware.c), the smallest
# Go c-shared plugin (testhost/emptygo: the Go runtime's own floor) and libncclbpf.so with the
# embedded default policy (NCCLBPF_POLICY unset), with size_aware and with none. Builds nothing: ART
# comes from testhost/gpu/build-art.sh (footprint, libnative.so, libemptygo.so, libncclbpf.so).
# Prints, per library: dlopen + first init (min and median, µs), threads added at rest and after 8
# threads of getCollInfo calls, RSS added at rest.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ART [N]" >&2; exit 2; }
ART=$(cd "$1" && pwd)
N=${2:-15}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cases=("native libnative.so builtin:size_aware" "emptygo libemptygo.so none" "ncclbpf-default libncclbpf.so unset"
	"ncclbpf-size_aware libncclbpf.so builtin:size_aware" "ncclbpf-none libncclbpf.so none")
for i in $(seq "$N"); do
	for c in "${cases[@]}"; do
		read -r name lib policy <<<"$c"
		pol=(NCCLBPF_POLICY="$policy")
		[ "$policy" = unset ] && pol=()
		env -u NCCLBPF_POLICY "${pol[@]}" NCCLBPF_CONTROL_DIR="$TMP/ctl" CALLS=20000 REST_MS=300 "$ART/footprint" "$ART/$lib" |
			paste -sd' ' >>"$TMP/$name"
	done
done
for c in "${cases[@]}"; do
	read -r name _ _ <<<"$c"
	awk '{for (i = 1; i < NF; i += 2) v[$i] = $(i + 1)
	      print v["dlopen_us"] + v["init_us"], v["threads_rest"] - v["threads_before"], v["threads_load"] - v["threads_before"], (v["rss_kb_rest"] - v["rss_kb_before"]) / 1024}' "$TMP/$name" |
		sort -n | awk -v n="$name" '{t[NR] = $1; if ($2 > th) th = $2; if ($3 > tl) tl = $3; if ($4 > r) r = $4}
		END {printf "%-18s dlopen+init min %6.0f us  median %6.0f us  threads +%d at rest, +%d under load  RSS +%.1f MB\n", n, t[1], t[int((NR + 1) / 2)], th, tl, r}'
done

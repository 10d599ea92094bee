#!/usr/bin/env bash
# Builds every committed eBPF object listed in scripts/bpf-objects.txt from
# its C source, with one set of flags, reproducibly: each source is compiled
# in its own folder, whose path is mapped to "." in the debug information
# and BTF (positions read "./file.c:LINE"), and the checkout's path to
# "/ncclbpf" (headers under include/), so the objects do not depend on where
# the tree lives.
#
#   scripts/build-bpf.sh            rebuild the objects in place
#   OUT=DIR scripts/build-bpf.sh    write them under DIR (same relative paths)
#
# Needs clang-19 (scripts/setup.sh installs it). Override with CLANG=.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
CLANG=${CLANG:-/usr/bin/clang-19}
OUT=${OUT:-$ROOT}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "build-bpf: $CLANG not found (run scripts/setup.sh)" >&2
	exit 1
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd -P)
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
FLAGS=(-target bpf -mcpu=v3 -O2 -g -Wall -Werror -Wno-array-bounds -Wno-uninitialized
	-I"$ROOT/include" -I"/usr/include/$MULTIARCH")

while read -r obj src extra; do
	case $obj in '' | '#'*) continue ;; esac
	mkdir -p "$OUT/$(dirname "$obj")"
	# shellcheck disable=SC2086 # extra holds zero or more flags
	dir=$ROOT/$(dirname "$src")
	(cd "$dir" && "$CLANG" "${FLAGS[@]}" -ffile-prefix-map="$ROOT"=/ncclbpf -ffile-prefix-map="$dir"=. \
		$extra -c "$(basename "$src")" -o "$OUT/$obj")
	if [ "$OUT" = "$ROOT" ]; then echo "built $obj"; fi
done <"$ROOT/scripts/bpf-objects.txt"

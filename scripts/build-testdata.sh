#!/usr/bin/env bash
# Rebuilds the committed eBPF test objects from their C sources:
#   testdata/loader/*.c -> testdata/loader/*.o
# Objects are committed so that `go test` needs no clang. A source whose
# first lines contain "MCPU: v4" is built with -mcpu=v4, the others with v3;
# one whose first lines contain "TARGET: bpfeb" is built big-endian.
# The build is reproducible: the source directory is mapped to "." in the
# debug info, so the objects do not depend on where the tree is checked out.
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG=${CLANG:-/usr/bin/clang-19}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "build-testdata: $CLANG not found (run scripts/setup.sh)" >&2
	exit 1
fi
# bpf_helpers.h needs <asm/types.h>, which lives in the multiarch directory.
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

build() { # dir
	local dir=$1 src obj cpu target
	for src in "$dir"/*.c; do
		[ -e "$src" ] || continue
		obj=${src%.c}.o
		cpu=v3
		if head -n 5 "$src" | grep -q 'MCPU: v4'; then
			cpu=v4
		fi
		target=bpf
		if head -n 5 "$src" | grep -q 'TARGET: bpfeb'; then
			target=bpfeb
		fi
		(
			cd "$dir"
			"$CLANG" -target "$target" -mcpu="$cpu" -O2 -g \
				-fdebug-prefix-map="$PWD"=. \
				-I"/usr/include/$MULTIARCH" \
				-Wall -Werror \
				-c "$(basename "$src")" -o "$(basename "$obj")"
		)
		echo "built $obj (-target $target -mcpu=$cpu)"
	done
}

build testdata/loader

#!/usr/bin/env bash
# Rebuilds the committed eBPF objects of package maps/enginetest:
#   maps/enginetest/testdata/*.bpf.c -> *.bpf.o
# Objects are committed so that `go test` needs no clang. The build is
# reproducible: the source directory is mapped to "." in the debug info.
set -euo pipefail
cd "$(dirname "$0")/../maps/enginetest/testdata"

CLANG=${CLANG:-/usr/bin/clang-19}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "build-enginetest: $CLANG not found (run scripts/setup.sh)" >&2
	exit 1
fi
# bpf_helpers.h needs <asm/types.h>, which lives in the multiarch directory.
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

for src in *.bpf.c; do
	obj=${src%.c}.o
	"$CLANG" -target bpf -mcpu=v3 -O2 -g -fdebug-prefix-map="$PWD"=. \
		-I"/usr/include/$MULTIARCH" -Wall -Werror -c "$src" -o "$obj"
	echo "built maps/enginetest/testdata/$obj"
done

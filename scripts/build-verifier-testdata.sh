#!/usr/bin/env bash
# Rebuilds the verifier's test corpus: testdata/verifier/*.c -> *.o with
#   clang-19 -target bpf -mcpu=v3 -O2 -g
# Objects are committed so that `go test ./verifier` needs no clang. The
# source directory is mapped to "." in the debug info, so the objects do not
# depend on where the tree is checked out.
set -euo pipefail
cd "$(dirname "$0")/../testdata/verifier"

CLANG=${CLANG:-/usr/bin/clang-19}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "build-verifier-testdata: $CLANG not found (run scripts/setup.sh)" >&2
	exit 1
fi
# bpf_helpers.h needs <asm/types.h>, which lives in the multiarch directory.
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

for src in *.c; do
	"$CLANG" -target bpf -mcpu=v3 -O2 -g -fdebug-prefix-map="$PWD"=. \
		-I"/usr/include/$MULTIARCH" -Wall -Wno-array-bounds -Wno-uninitialized \
		-c "$src" -o "${src%.c}.o"
	echo "built testdata/verifier/${src%.c}.o"
done

# The red-team corpus (testdata/verifier/redteam) is built the same way.
cd redteam
for src in *.c; do
	"$CLANG" -target bpf -mcpu=v3 -O2 -g -fdebug-prefix-map="$PWD"=. \
		-I"/usr/include/$MULTIARCH" -I../../../include -Wall -Wno-array-bounds -Wno-uninitialized \
		-c "$src" -o "${src%.c}.o"
	echo "built testdata/verifier/redteam/${src%.c}.o"
done

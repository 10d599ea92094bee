#!/usr/bin/env bash
# Rebuild the committed policy objects (policies/*.bpf.o) from their C
# sources. Needs clang-19 and libbpf's headers (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG=${CLANG:-/usr/bin/clang-19}
for src in policies/*.bpf.c; do
	obj=${src%.c}.o
	"$CLANG" -target bpf -mcpu=v3 -O2 -g -Wall -Werror -I include -c "$src" -o "$obj"
	echo "built $obj"
done

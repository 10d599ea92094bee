#!/usr/bin/env bash
# Rebuild the committed policy objects (policies/NAME.bpf.o) from their C
# sources (policies/src/NAME.bpf.c) and the plugin's test policies
# (nccl/testdata/*.bpf.c). Needs clang-19 and libbpf's headers.
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG=${CLANG:-/usr/bin/clang-19}
build() {
	"$CLANG" -target bpf -mcpu=v3 -O2 -g -Wall -Werror -I include -c "$1" -o "$2"
	echo "built $2"
}
for src in policies/src/*.bpf.c; do
	build "$src" "policies/$(basename "${src%.c}").o"
done
for src in nccl/testdata/*.bpf.c; do
	[ -e "$src" ] && build "$src" "${src%.c}.o"
done

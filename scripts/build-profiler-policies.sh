#!/usr/bin/env bash
# Rebuild the committed profiler example bundles (policies/latency_stats,
# policies/adaptive), the GPU-machine check bundle
# (testhost/profiler_device_policy) and the agreed-map test policy
# (testhost/agreed_ch) from their C sources. Needs clang-19 and
# libbpf's headers (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG=${CLANG:-/usr/bin/clang-19}
for dir in policies/latency_stats policies/adaptive; do
	name=$(basename "$dir")
	src=$dir/$name.bpf.c
	obj=$dir/$name.bpf.o
	"$CLANG" -target bpf -mcpu=v3 -O2 -g -Wall -Werror -I include -I "$dir" -c "$src" -o "$obj"
	echo "built $obj"
done
"$CLANG" -target bpf -mcpu=v3 -O2 -g -Wall -Werror -I include -c testhost/profiler_device_policy.bpf.c \
	-o testhost/profiler_device_policy.bpf.o
echo "built testhost/profiler_device_policy.bpf.o"
"$CLANG" -target bpf -mcpu=v3 -O2 -g -Wall -Werror -I include -c testhost/agreed_ch.bpf.c -o testhost/agreed_ch.bpf.o
echo "built testhost/agreed_ch.bpf.o"

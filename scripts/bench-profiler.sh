#!/usr/bin/env bash
# Profiler benchmark (BENCHMARKS.md): cost per profiler event of ncclbpf with the latency_stats
# bundle (JIT-compiled in libncclbpf.so) against the same bookkeeping with latency_stats compiled
# natively in the same shim, and with an empty program; one process, the program in the slot
# alternating, best of 5 rounds of 100000 collectives (task + 2 kernel channels with GPU stamps).
# Goal: ebpf/native at most 1.5x per profiler call.
# Usage: scripts/bench-profiler.sh [BUILD_DIR]   (default: build; SKIP_BUILD=1 reuses it)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
mkdir -p "$B"
if [ -z "${SKIP_BUILD:-}" ]; then
	CGO_ENABLED=1 go build -buildmode=c-shared -o "$B/libncclbpf.so" ./plugin
	gcc -O2 -std=gnu11 -Wall -pthread -o "$B/profiler-host" testhost/profiler_host.c testhost/profiler_native.c -ldl
fi
NCCLBPF_POLICY="$PWD/policies/latency_stats/latency_stats.bpf.o" exec "$B/profiler-host" bench "$B/libncclbpf.so"

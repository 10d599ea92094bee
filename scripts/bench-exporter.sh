#!/usr/bin/env bash
# The exporter's cost on getCollInfo (BENCHMARKS.md): one run of the tuner
# benchmark host (testhost/host.c bench: each configuration in its own
# process, rounds interleaved, best round kept) in which some configurations
# are scraped by `ncclbpf exporter` every SCRAPE_INTERVAL (default 1s) and
# the others, the same library and policy, are not. With BASE_LIB set (a
# libncclbpf.so built from an earlier tree), that library runs beside.
# Usage: scripts/bench-exporter.sh [BUILD_DIR]   (default: build; SKIP_BUILD=1 reuses it)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
mkdir -p "$B"
B=$(cd "$B" && pwd -P)
if [ -z "${SKIP_BUILD:-}" ]; then
	scripts/build.sh lib-testing "$B/libncclbpf.so" # the host reads the shim's own counters
	scripts/build.sh cli "$B/ncclbpf"
	scripts/build.sh host "$B/tuner-host"
	scripts/build.sh native "$B/libnative-size-aware.so"
fi
command -v curl >/dev/null || { echo "bench-exporter: curl is needed to scrape" >&2; exit 1; }
L="$B/libncclbpf.so"
IDLE="$B/ctl-idle" SCRAPED="$B/ctl-scraped"
rm -rf "$IDLE" "$SCRAPED"
mkdir -p -m 0700 "$IDLE" "$SCRAPED"
PORT=${PORT:-19479}
"$B/ncclbpf" exporter --dir "$SCRAPED" --listen "127.0.0.1:$PORT" >/dev/null &
EXP=$!
(
	while sleep "${SCRAPE_INTERVAL:-1}"; do
		curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" || true
	done
) &
SCR=$!
trap 'kill $SCR $EXP 2>/dev/null || true' EXIT
cfg=(none "native=$B/libnative-size-aware.so"
	"noop=$L:NCCLBPF_POLICY=builtin:noop;NCCLBPF_CONTROL_DIR=$IDLE"
	"noop+scrape=$L:NCCLBPF_POLICY=builtin:noop;NCCLBPF_CONTROL_DIR=$SCRAPED"
	"size_aware=$L:NCCLBPF_POLICY=builtin:size_aware;NCCLBPF_CONTROL_DIR=$IDLE"
	"size_aware+scrape=$L:NCCLBPF_POLICY=builtin:size_aware;NCCLBPF_CONTROL_DIR=$SCRAPED")
if [ -n "${BASE_LIB:-}" ]; then
	cfg+=("base-noop=$BASE_LIB:NCCLBPF_POLICY=builtin:noop;NCCLBPF_CONTROL_DIR=$IDLE"
		"base-size_aware=$BASE_LIB:NCCLBPF_POLICY=builtin:size_aware;NCCLBPF_CONTROL_DIR=$IDLE")
fi
"$B/tuner-host" bench "${cfg[@]}"
curl -s "http://127.0.0.1:$PORT/metrics" | grep -c '^ncclbpf_' | sed 's/^/series served at the last scrape: /'

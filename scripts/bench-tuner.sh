#!/usr/bin/env bash
# Tuner benchmark (BENCHMARKS.md): one run of the C test host, medians of
# many getCollInfo calls per configuration, each in its own process:
#   none        the host's loop without a plugin
#   native      size_aware as a plain C tuner plugin (testhost/native_size_aware.c)
#   noop, size_aware, rules10, rules100   libncclbpf.so with the embedded policies
#   example10, example100 (if EXAMPLE_TUNER=path/to/libnccl-tuner-example.so is set):
#               NCCL's example CSV tuner with the same rules files
# Usage: scripts/bench-tuner.sh [BUILD_DIR]   (default: build; SKIP_BUILD=1 reuses it)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
mkdir -p "$B"
if [ -z "${SKIP_BUILD:-}" ]; then
	scripts/build.sh lib-testing "$B/libncclbpf.so" # the shim-only rows put a C function in the slot (HOST_BENCH_NATIVE_PROGRAM)
	scripts/build.sh host "$B/tuner-host"
	scripts/build.sh native "$B/libnative-size-aware.so"
fi
"$B/tuner-host" genrules 10 "$B/rules10.conf"
"$B/tuner-host" genrules 100 "$B/rules100.conf"
L="$B/libncclbpf.so"
cfg=(none "native=$B/libnative-size-aware.so"
	"noop=$L:NCCLBPF_POLICY=builtin:noop"
	"size_aware=$L:NCCLBPF_POLICY=builtin:size_aware"
	"rules10=$L:NCCLBPF_POLICY=builtin:rules;NCCLBPF_RULES_FILE=$B/rules10.conf"
	"rules100=$L:NCCLBPF_POLICY=builtin:rules;NCCLBPF_RULES_FILE=$B/rules100.conf")
if [ -n "${EXAMPLE_TUNER:-}" ]; then
	cfg+=("example10=$EXAMPLE_TUNER:NCCL_TUNER_CONFIG_FILE=$B/rules10.conf"
		"example100=$EXAMPLE_TUNER:NCCL_TUNER_CONFIG_FILE=$B/rules100.conf")
fi
exec "$B/tuner-host" bench "${cfg[@]}"

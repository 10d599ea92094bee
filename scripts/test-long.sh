#!/usr/bin/env bash
# Long runs that do not belong in the default test run (`make test-long`):
# fuzzing, one million differential programs, soundness at scale, hammers
# (reloads and swaps), start-up races, rank consistency of the adaptive
# policy over 8 ranks, and the comparison with the running kernel's eBPF
# verifier (needs root and bpf(2); its table of explained differences was
# recorded on Linux 6.18).
# Each prints its own result; the script stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10m}
run() { echo "== $*"; "$@"; }
run go test ./loader -run '^$' -fuzz '^FuzzLoad$' -fuzztime "$FUZZTIME" -fuzzminimizetime 10x -timeout 2h
run go test ./verifier -run '^$' -fuzz '^FuzzVerify$' -fuzztime "$FUZZTIME" -timeout 2h
NCCLBPF_DIFF_N=${NCCLBPF_DIFF_N:-1000000} run go test ./jit/amd64 -run 'TestDifferential$' -v -timeout 6h
# The same million programs on the arm64 JIT, cross-built and run under qemu-aarch64.
NCCLBPF_ARM64_DIFF_N=${NCCLBPF_ARM64_DIFF_N:-1000000} run go test ./internal/cross -run 'TestArm64JIT$' -v -timeout 8h
NCCLBPF_KERNEL_VERIFIER=require run go test ./verifier -run 'TestKernelVerifierAgrees$' -v -count=1
VERIFIER_RANDOM_PROGRAMS=${VERIFIER_RANDOM_PROGRAMS:-30000} run go test ./verifier -run SoundnessRandom -timeout 2h
# Rank uniformity: one million random tuner programs, each accepted one run twice with different local data.
NCCLBPF_TWIN_PROGRAMS=${NCCLBPF_TWIN_PROGRAMS:-1000000} run go test ./verifier -run 'TestTwoRunOracle$' -v -count=1 -timeout 3h
NCCLBPF_PTRGEN_N=${NCCLBPF_PTRGEN_N:-1000000} run go test ./verifier -run 'TestPtrSoundness$' -v -timeout 4h
NCCLBPF_HAMMER_SECONDS=${NCCLBPF_HAMMER_SECONDS:-10} run go test ./maps -run 'Hammer|Churn' -v -timeout 30m
NCCLBPF_HAMMER_CALLS=${NCCLBPF_HAMMER_CALLS:-10000000} NCCLBPF_HAMMER_RELOADS=${NCCLBPF_HAMMER_RELOADS:-10000} \
	run go test ./plugin/e2e -run 'TestReloadHammer$|TestReloadAtSeq' -v -timeout 4h
# Hot reload at scale: swaps of two prebuilt bundles (publish + grace period each) under 8 calling
# threads, no call lost or wrong (BENCHMARKS.md, "Hot reload under load").
NCCLBPF_HAMMER_SWAPS=${NCCLBPF_HAMMER_SWAPS:-1000000} NCCLBPF_HAMMER_CALLS=${NCCLBPF_HAMMER_SWAP_CALLS:-1000000} \
	NCCLBPF_HAMMER_THREADS=8 run go test ./plugin/e2e -run 'TestReloadSwapHammer$' -v -count=1 -timeout 4h
# Start-up: many more rounds of 64 processes loading the library at one instant.
NCCLBPF_STARTUP_ROUNDS=${NCCLBPF_STARTUP_ROUNDS_LONG:-30} run go test ./plugin/e2e -run 'TestControlStartupRace$' -v -count=1 -timeout 2h
NCCLBPF_RANKS8=1 run go test ./plugin/e2e -run 'TestProfilerRankConsistency$' -v -timeout 30m
# The README's main command: the demo script 20 times in a row under CPU load, none may fail.
NCCLBPF_DEMO_RUNS=${NCCLBPF_DEMO_RUNS:-20} run go test ./plugin/e2e -run 'TestDemoUnderLoad$' -v -count=1 -timeout 30m
run go run ./internal/mutations

// SPDX-License-Identifier: MIT
// p2p_empty: a profiler program on P2p completions that does nothing and reads nothing, for
// scripts/gpu-profiler-cost.sh: what NCCL and the shim cost for an active profiler hook before any
// policy work (compare with p2p_count.bpf.o, which counts the same events).
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

SEC("profiler/p2p_end")
int p2p_empty_end(struct ncclbpf_prof_ctx *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

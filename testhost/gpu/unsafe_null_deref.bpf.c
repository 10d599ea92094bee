// SPDX-License-Identifier: MIT
// unsafe_null_deref: a policy the verifier must reject (scripts/gpu-check.sh loads it under real
// NCCL and expects exactly one ncclbpf warning, NCCL's defaults, and correct results). The value
// pointer of bpf_map_lookup_elem may be NULL; this program dereferences it without a check.
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

#define MAP_TYPE_ARRAY 2

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

SEC("profiler/p2p_end")
int unsafe_p2p_end(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = (__u32)ctx->func & 15;
	__u64 *n = bpf_map_lookup_elem(&counts, &k);
	*n += 1; /* no NULL check: rejected */
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

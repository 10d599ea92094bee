// SPDX-License-Identifier: MIT
// unsafe_join: a policy the verifier must reject, in the shape of a profiler program that once passed
// verification and crashed a real job: two per-peer counters are swapped on one path, and after the
// join their difference (taken for a constant) is added back to one of them, which writes far outside
// the map. scripts/gpu-check.sh loads it under real NCCL and expects exactly one ncclbpf warning,
// NCCL's defaults, and correct results.
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

#define MAP_TYPE_ARRAY 2

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} per_peer SEC(".maps");

SEC("profiler/p2p_end")
int unsafe_p2p_end(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k1 = (__u32)ctx->peer & 255, k2 = ((__u32)ctx->rank & 255) ^ 255;
	__u64 *a = bpf_map_lookup_elem(&per_peer, &k1);
	__u64 *b = bpf_map_lookup_elem(&per_peer, &k2);
	__u64 *p = a, *q = b;
	long d;

	if (!a || !b)
		return 0;
	if (ctx->is_send) {
		p = b;
		q = a;
	}
	asm volatile("%0 -= %1" : "=r"(d) : "r"(q), "0"(p)); /* rejected: E023 bad-ptr-arith */
	*(__u64 *)((char *)p + d) += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

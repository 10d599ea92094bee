// SPDX-License-Identifier: MIT
// profiler_device_policy: a bundle for the GPU-machine check of the eBPF profiler path under real
// NCCL (testhost/profiler_device.py). With one GPU only send/recv to self reaches the profiler:
// p2p_end counts them per function and reports every 512th through bpf_printk (NCCL's log).
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

#define MAP_TYPE_ARRAY 2

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} p2p_count SEC(".maps");

SEC("profiler/p2p_end")
int p2p_seen(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = (__u32)ctx->func & 15;
	__u64 *n = bpf_map_lookup_elem(&p2p_count, &k);
	if (!n)
		return 0;
	__u64 c = __sync_fetch_and_add(n, 1) + 1;
	if ((c & 511) == 1)
		bpf_printk("p2p_end func %d count %llu host ns %llu", ctx->func, c, ctx->duration_ns);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

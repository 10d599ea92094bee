// SPDX-License-Identifier: MIT
// prof_kch: a bundle whose kernel_ch_end program needs kernel-channel events, next to a p2p_end
// program that reads no time (testhost/profiler_host.c "needs" scenario). The activation mask must
// ask for P2p and KernelCh events; each channel must reach kernel_ch_end with its task as parent
// (p2p tasks wait for their channels while a kernel_ch_end program is loaded).
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

#define MAP_TYPE_ARRAY 2

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} kch_count SEC(".maps");

SEC("profiler/kernel_ch_end")
int kch_seen(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = (__u32)ctx->channel_id & 63;
	__u64 *n = bpf_map_lookup_elem(&kch_count, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("profiler/p2p_end")
int p2p_seen(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = 32 + ((__u32)ctx->func & 31);
	__u64 *n = bpf_map_lookup_elem(&kch_count, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

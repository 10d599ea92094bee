// SPDX-License-Identifier: MIT
// reload_pa: a test policy of the reload hammer's profiler variant (testhost/reload_hammer.c, run
// by TestReloadHammer*). The tuner program takes the decision of reload_a (TREE/LL on 3 channels);
// the profiler program p2p_end counts every p2p event it completes in slot 0 of the map "pev". Both
// reload_pa and reload_pb define "hits" and "pev" alike, so a reload carries them over: at the end
// pev[0] + pev[1] must equal the p2p events the host emitted (none lost or counted twice).
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} pev SEC(".maps");

SEC("tuner")
int reload_pa(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	ctx->algorithm = NCCLBPF_ALGO_TREE;
	asm volatile("" ::: "memory"); /* three 4-byte stores, not one merged 8-byte store */
	ctx->protocol = NCCLBPF_PROTO_LL;
	asm volatile("" ::: "memory");
	ctx->n_channels = 3;
	return NCCLBPF_TUNER_APPLY;
}

SEC("profiler/p2p_end")
int reload_pa_p2p(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&pev, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
// reload_a: a test policy of the reload hammer (testhost/reload_hammer.c).
// Every call takes the same decision, TREE/LL on 3 channels, so that the
// host can tell which of the two policies took each decision. Both policies
// define the map "hits" alike (a reload keeps its contents) and count calls
// in it.
#include "ncclbpf.h"

struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

SEC("tuner")
int reload_a(struct ncclbpf_tuner_ctx *ctx)
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

char LICENSE[] SEC("license") = "Dual MIT/GPL";

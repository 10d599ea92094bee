// SPDX-License-Identifier: MIT
// reload_b: a test policy of the reload hammer (testhost/reload_hammer.c).
// Every call takes the same decision, RING/SIMPLE on 7 channels, so that the
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

/* Only in this policy: created fresh by each reload to it. */
struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} b_only SEC(".maps");

SEC("tuner")
int reload_b(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 1;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	k = 0;
	v = bpf_map_lookup_elem(&b_only, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	ctx->algorithm = NCCLBPF_ALGO_RING;
	asm volatile("" ::: "memory"); /* three 4-byte stores, not one merged 8-byte store */
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	asm volatile("" ::: "memory");
	ctx->n_channels = 7;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

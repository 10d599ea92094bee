// SPDX-License-Identifier: MIT
// reload_decide: a test policy for hot reloads (bundle's TestReuseNeverLaundersLocalData). It
// defines "hits" as reload_a does, but no program of it writes the map: its tuner reads hits[0] as
// rank-uniform data and decides on it (the channel count). When it replaces reload_a, whose tuner
// counted calls in hits (a rank-local number), hits must not be carried over.
#include "ncclbpf.h"

struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

SEC("tuner")
int reload_decide(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);
	if (v && *v > 100)
		ctx->n_channels = 2;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

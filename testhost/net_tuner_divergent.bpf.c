// SPDX-License-Identifier: MIT
// net_tuner_divergent: a tuner program that decides from a map a net program writes with a measured
// latency (rank-local). The verifier must refuse it (E033): ranks would decide differently and hang
// the collective. Used by plugin/e2e/net_test.go; the agreed-map route (ncclbpf agree) is the way to use
// net measurements in decisions.
#include "ncclbpf.h"
#include "ncclbpf_net.h"

struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} net_lat SEC(".maps");

SEC("net/send_end")
int net_lat_send(struct ncclbpf_net_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&net_lat, &k);
	if (v)
		*v = ctx->duration_ns;
	return 0;
}

SEC("tuner")
int net_lat_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&net_lat, &k);
	if (v && *v > 1000000)
		ctx->n_channels = 2;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

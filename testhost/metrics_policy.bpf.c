// SPDX-License-Identifier: MIT
// metrics_policy: the exporter's end-to-end test policy. The tuner takes Ring/Simple for AllReduce of
// at least 1 MiB, Tree/LL with 4 channels for AllReduce below 64 KiB, and leaves everything else to
// NCCL. The profiler keeps `metrics_colls`, a map that follows the metrics convention
// (docs/metrics.md): per collective a counter, a byte counter and a latency histogram.
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

#define MAP_TYPE_HASH 1

struct mc_val {
	__u64 calls_total;
	__u64 bytes_total;
	__u64 latency_ns_hist[32]; /* bucket i: latency <= 2^i ns, the last: above */
	__u64 latency_ns_sum;
};

struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct mc_val);
} metrics_colls SEC(".maps");

SEC("tuner")
int pick(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->coll_type != NCCLBPF_COLL_ALLREDUCE)
		return NCCLBPF_TUNER_DEFAULT;
	if (ctx->n_bytes >= (1u << 20) &&
	    (ctx->avail_mask & (1u << NCCLBPF_CELL(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE)))) {
		ctx->algorithm = NCCLBPF_ALGO_RING;
		ctx->protocol = NCCLBPF_PROTO_SIMPLE;
		return NCCLBPF_TUNER_APPLY;
	}
	if (ctx->n_bytes < (64u << 10) && (ctx->avail_mask & (1u << NCCLBPF_CELL(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL)))) {
		/* 4-byte stores: clang would merge neighbouring constant stores into one 8-byte store */
		*(volatile __s32 *)&ctx->algorithm = NCCLBPF_ALGO_TREE;
		*(volatile __s32 *)&ctx->protocol = NCCLBPF_PROTO_LL;
		*(volatile __s32 *)&ctx->n_channels = 4;
		return NCCLBPF_TUNER_APPLY;
	}
	return NCCLBPF_TUNER_DEFAULT;
}

SEC("profiler/coll_end")
int count(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = (__u32)ctx->func;
	struct mc_val *v = bpf_map_lookup_elem(&metrics_colls, &k);
	if (!v) {
		struct mc_val z = {};
		bpf_map_update_elem(&metrics_colls, &k, &z, 1 /* BPF_NOEXIST */);
		v = bpf_map_lookup_elem(&metrics_colls, &k);
		if (!v)
			return 0;
	}
	__u64 ns = ncclbpf_prof_latency_ns(ctx);
	__u32 b = 0;
	for (__u32 i = 0; i < 31; i++)
		if (ns > (1ull << i))
			b = i + 1;
	__sync_fetch_and_add(&v->calls_total, 1);
	__sync_fetch_and_add(&v->bytes_total, ctx->bytes);
	__sync_fetch_and_add(&v->latency_ns_sum, ns);
	if (b < 32)
		__sync_fetch_and_add(&v->latency_ns_hist[b], 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
// cost_record: the recording tuner of scripts/gpu-cost-capture.sh. For every getCollInfo call it
// stores, per (collective, bytes), the cost table NCCL handed the tuner (21 float cells as bits,
// -1.0 = unavailable) with the inputs the per-call model needs, then leaves every decision to
// NCCL. The script dumps the map (ncclbpf map dump --json) into costs.json, which
// internal/ncclabi's TestCaptures compares cell by cell with the model computed from NCCL's log.
#include "ncclbpf.h"

#define MAP_TYPE_HASH 1

struct cost_key {
	__u32 coll_type;
	__u32 pad;
	__u64 n_bytes;
};

struct cost_rec {
	__u32 cost[NCCLBPF_NUM_ALGORITHMS * NCCLBPF_NUM_PROTOCOLS];
	__u32 n_ranks;
	__u32 n_nodes;
	__s32 num_pipe_ops;
	__u32 calls; /* getCollInfo calls with this key (the last one's table is kept) */
};

struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct cost_key);
	__type(value, struct cost_rec);
} costs SEC(".maps");

SEC("tuner")
int cost_record(struct ncclbpf_tuner_ctx *ctx)
{
	struct cost_key k = {.coll_type = ctx->coll_type, .n_bytes = ctx->n_bytes};
	struct cost_rec r = {};
	struct cost_rec *old = bpf_map_lookup_elem(&costs, &k);

#pragma unroll
	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++) {
#pragma unroll
		for (int p = 0; p < NCCLBPF_NUM_PROTOCOLS; p++)
			r.cost[a * NCCLBPF_NUM_PROTOCOLS + p] = ctx->cost[a][p];
	}
	r.n_ranks = ctx->n_ranks;
	r.n_nodes = ctx->n_nodes;
	r.num_pipe_ops = ctx->num_pipe_ops;
	r.calls = old ? old->calls + 1 : 1;
	bpf_map_update_elem(&costs, &k, &r, BPF_ANY);
	return NCCLBPF_TUNER_DEFAULT;
}

char LICENSE[] SEC("license") = "MIT";

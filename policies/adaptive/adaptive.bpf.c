// SPDX-License-Identifier: MIT
// adaptive: a closed loop between the profiler and the tuner in one bundle.
//
//   SEC("profiler/coll_end")  records how each (algorithm, protocol, channels) candidate performed
//                             per communicator, collective and size bucket (EWMA of the GPU kernel
//                             time when NCCL provides it, host time otherwise) into `stats`;
//   SEC("tuner")              explores the 12 candidates on a schedule that depends only on
//                             rank-uniform inputs (the per-bucket call count), then keeps the best,
//                             re-evaluated at rank-uniform checkpoints: among the candidates measured
//                             within `margin`/64 of the fastest, the one NCCL's cost table ranks
//                             first; explores again every `period` calls of the bucket.
//
// Both programs share the maps below: that sharing is the closed loop. See README.md in this
// directory for what rank-consistency risk remains and how the policy limits it.
//
// Tunables (NCCLBPF_POLICY_CONFIG="rounds=4,period=2048,check=16,prune=2,margin=8"):
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

/* Linux's numbering (uapi bpf.h), spelled locally so that no kernel header is needed. */
#define MAP_TYPE_HASH 1
#define UPDATE_NOEXIST 1

volatile const __u32 rounds = 4;   /* samples of each candidate per exploration window */
volatile const __u32 period = 2048; /* bucket calls between the starts of exploration windows */
volatile const __u32 check = 16;   /* bucket calls between re-evaluations of the choice */
volatile const __u32 prune = 2;    /* explore only cells NCCL estimates within 2^prune of its best */
volatile const __u32 margin = 8;   /* measured latencies within margin/64 of the best count as tied */

#define ADAPTIVE_ROUNDS (rounds ? rounds : 1)
#define ADAPTIVE_PERIOD (period > ADAPTIVE_NCAND * ADAPTIVE_ROUNDS ? period : ADAPTIVE_NCAND * ADAPTIVE_ROUNDS + 1)
#define ADAPTIVE_CHECK (check ? check : 1)
#define ADAPTIVE_MARGIN ((__u64)(margin < 64 ? margin : 64))

#include "adaptive.h"

struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct adaptive_skey);
	__type(value, struct adaptive_state);
} state SEC(".maps");

struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct adaptive_mkey);
	__type(value, struct adaptive_stat);
} stats SEC(".maps");

#define ADAPTIVE_STATE_LOOKUP(k) ((struct adaptive_state *)bpf_map_lookup_elem(&state, (k)))
#define ADAPTIVE_STATE_INSERT(k, v) bpf_map_update_elem(&state, (k), (v), UPDATE_NOEXIST)
#define ADAPTIVE_STAT_LOOKUP(k) ((struct adaptive_stat *)bpf_map_lookup_elem(&stats, (k)))
#define ADAPTIVE_STAT_INSERT(k, v) bpf_map_update_elem(&stats, (k), (v), UPDATE_NOEXIST)
#define ADAPTIVE_ATOMIC_ADD(p, v) __sync_fetch_and_add((p), (v))

#include "adaptive.h"

SEC("profiler/coll_end")
int adaptive_measure(struct ncclbpf_prof_ctx *ctx)
{
	if (ctx->flags & (NCCLBPF_PROF_F_FORCED | NCCLBPF_PROF_F_HOST_ONLY))
		return 0; /* incomplete measurement */
	__u64 ns = ncclbpf_prof_latency_ns(ctx);
	adaptive_record(ctx->comm_id, ctx->func, ctx->bytes, ctx->algorithm, ctx->protocol, ctx->n_channels, ns);
	return 0;
}

SEC("tuner")
int adaptive_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 explore = adaptive_plausible(ctx->cost[0][0], ctx->cost[0][1], ctx->cost[0][2], ctx->cost[1][0],
					   ctx->cost[1][1], ctx->cost[1][2], ctx->avail_mask, prune);
	__u32 cost[6] = {ctx->cost[0][0], ctx->cost[0][1], ctx->cost[0][2], ctx->cost[1][0], ctx->cost[1][1], ctx->cost[1][2]};
	int c = adaptive_decide(ctx->comm_id, ctx->coll_type, ctx->n_bytes, ctx->avail_mask, explore, cost);
	if (c < 0)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = adaptive_cand_algo(c);
	ctx->protocol = adaptive_cand_proto(c);
	ctx->n_channels = adaptive_cand_nch(c);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

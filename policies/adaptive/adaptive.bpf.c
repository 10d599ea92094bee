// SPDX-License-Identifier: MIT
// adaptive: a closed loop between the profiler and the tuner that stays rank-consistent.
//
//   SEC("profiler/coll_end")  records how each (algorithm, protocol, channels) candidate performed
//                             per communicator, collective and size bucket (EWMA of the GPU kernel
//                             time when NCCL provides it, host time otherwise) into `local`: this
//                             rank's measurements, which the tuner never reads;
//   SEC("tuner")              decides from rank-uniform inputs only: call_seq, size, collective,
//                             NCCL's cost table, the tunables, and the agreed map `agreed`, which
//                             the control plane fills from every rank's `local` and switches at
//                             the same call on every rank:
//
//     ncclbpf agree --from local --to agreed --reduce min:12,mean:12 --at-seq +64
//
// See adaptive.h for the schedule and README.md for the figures.
//
// Tunables (NCCLBPF_POLICY_CONFIG="rounds=3,period=8192,window=96,prune=2,margin=8"):
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

/* Linux's numbering (uapi bpf.h), spelled locally so that no kernel header is needed. */
#define MAP_TYPE_HASH 1
#define UPDATE_NOEXIST 1

volatile const __u32 rounds = 3;    /* agreed samples of each candidate before exploiting */
volatile const __u32 period = 8192; /* communicator calls between the starts of exploration windows */
volatile const __u32 window = 96;   /* communicator calls of each exploration window */
volatile const __u32 prune = 2;     /* explore only cells NCCL estimates within 2^prune of its best */
volatile const __u32 margin = 8;    /* agreed latencies within margin/64 of the best count as tied */

#define ADAPTIVE_ROUNDS (rounds ? rounds : 1)
#define ADAPTIVE_PERIOD ((__u64)(period > window ? period : window + 1u) ?: 1)
#define ADAPTIVE_WINDOW ((__u64)window)
#define ADAPTIVE_MARGIN ((__u64)(margin < 64 ? margin : 64))

#include "adaptive.h"

/* This rank's measurements: written by the profiler program only. */
struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct adaptive_key);
	__type(value, struct adaptive_cands);
} local SEC(".maps");

/* The ranks' agreed measurements: read-only for programs, written by `ncclbpf agree`. */
struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct adaptive_key);
	__type(value, struct adaptive_cands);
	NCCLBPF_AGREED;
} agreed SEC(".maps");

#define ADAPTIVE_LOCAL_LOOKUP(k) ((struct adaptive_cands *)bpf_map_lookup_elem(&local, (k)))
#define ADAPTIVE_LOCAL_INSERT(k, v) bpf_map_update_elem(&local, (k), (v), UPDATE_NOEXIST)
#define ADAPTIVE_AGREED_LOOKUP(k) ((const struct adaptive_cands *)bpf_map_lookup_elem(&agreed, (k)))
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
	int c = adaptive_decide(ctx->comm_id, ctx->coll_type, ctx->n_bytes, ctx->call_seq, ctx->avail_mask, explore, cost);
	if (c < 0)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = adaptive_cand_algo(c);
	ctx->protocol = adaptive_cand_proto(c);
	ctx->n_channels = adaptive_cand_nch(c);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
// size_aware: Ring/Simple for mid-size AllReduce, the message-size-aware idea
// that the NCCLbpf paper reports +27% AllReduce bandwidth with on 8 GPUs.
// Guarded so that it only fires where that result was measured: AllReduce
// only, a single node / NVLink domain, 2..max_ranks ranks, a size in
// [size_lo, size_hi], and only when NCCL marked Ring/Simple available.
// Everything else is left to NCCL. Every input used is rank-uniform.
//
// Tunables (NCCLBPF_POLICY_CONFIG="size_lo=4M,size_hi=128M,max_ranks=8"):
#include "ncclbpf.h"

volatile const __u64 size_lo = 4ull << 20;   /* bytes, inclusive */
volatile const __u64 size_hi = 128ull << 20; /* bytes, inclusive */
volatile const __u32 max_ranks = 8;

SEC("tuner")
int size_aware(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->coll_type != NCCLBPF_COLL_ALLREDUCE)
		return NCCLBPF_TUNER_DEFAULT;
	if (ctx->n_ranks < 2 || ctx->n_ranks > max_ranks)
		return NCCLBPF_TUNER_DEFAULT;
	if (ctx->n_nodes != 1 || ctx->n_nvl_domains > 1)
		return NCCLBPF_TUNER_DEFAULT;
	if (ctx->n_bytes < size_lo || ctx->n_bytes > size_hi)
		return NCCLBPF_TUNER_DEFAULT;
	if (!(ctx->avail_mask & (1u << NCCLBPF_CELL(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE))))
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = NCCLBPF_ALGO_RING;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

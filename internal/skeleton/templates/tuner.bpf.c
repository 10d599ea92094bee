// SPDX-License-Identifier: MIT
// __NAME__: a tuner policy (NCCL's getCollInfo). Build, check and try it:
//   __BUILD__
//   ncclbpf verify __NAME__.bpf.o
//   ncclbpf run __NAME__.bpf.o --coll allreduce --bytes 4MiB --ranks 8
// Then in a job: NCCL_TUNER_PLUGIN=libncclbpf.so NCCLBPF_POLICY=$PWD/__NAME__.bpf.o
#include "ncclbpf.h"

/* A tunable, set at load time: NCCLBPF_POLICY_CONFIG=size_lo=8M (ncclbpf run --var size_lo=8M). */
volatile const __u64 size_lo = 4 << 20;

/* Decisions taken, per collective (ncclbpf map dump PID decisions). The tuner only writes this map:
 * a decision read back from it would differ between ranks, and the verifier refuses that. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} decisions SEC(".maps");

SEC("tuner")
int __NAME__(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 coll = ctx->coll_type;
	__u64 *n;

	/* Only [uniform] inputs decide: every rank must choose alike. */
	if (ctx->n_bytes < size_lo ||
	    !(ctx->avail_mask & (1u << NCCLBPF_CELL(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE))))
		return NCCLBPF_TUNER_DEFAULT; /* NCCL decides */
	ctx->algorithm = NCCLBPF_ALGO_RING;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	n = bpf_map_lookup_elem(&decisions, &coll);
	if (n)
		__sync_fetch_and_add(n, 1);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

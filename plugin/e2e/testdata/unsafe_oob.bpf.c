// SPDX-License-Identifier: MIT
// A tuner policy the verifier must reject: it indexes the cost table with
// a value it does not bound (a read outside the context for large sizes).
#include "ncclbpf.h"

SEC("tuner")
int unsafe_oob(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 i = (__u32)ctx->n_bytes;
	__u32 *cells = &ctx->cost[0][0];
	if (cells[i] == 0)
		ctx->algorithm = NCCLBPF_ALGO_RING;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

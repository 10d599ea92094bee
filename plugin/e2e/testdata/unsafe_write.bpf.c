// SPDX-License-Identifier: MIT
// A tuner policy the verifier must reject: it writes an input (n_bytes is
// read-only) and reads past the end of the context. Loading it must leave
// NCCL's defaults in place.
#include "ncclbpf.h"

SEC("tuner")
int unsafe_write(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_bytes = 0;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

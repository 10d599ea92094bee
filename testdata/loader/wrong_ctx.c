// SPDX-License-Identifier: MIT
/* A tuner program whose parameter is the profiler's context, and one whose
 * parameter names an ncclbpf_ struct that does not exist. */
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

SEC("tuner")
int profiler_ctx_in_tuner(struct ncclbpf_prof_ctx *ctx)
{
	return 0;
}

struct ncclbpf_profiler_ctx;

SEC("tuner")
int misspelt_ctx(struct ncclbpf_profiler_ctx *ctx)
{
	return 0;
}

SEC("tuner")
int right_ctx(struct ncclbpf_tuner_ctx *ctx)
{
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "MIT";

// SPDX-License-Identifier: MIT
// A program in a section no hook attaches to: the bundle must be refused.
#include "ncclbpf.h"

SEC("tuner/unknown")
int wrong_hook(struct ncclbpf_tuner_ctx *ctx)
{
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

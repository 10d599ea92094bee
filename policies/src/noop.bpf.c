// SPDX-License-Identifier: MIT
// noop: the embedded default policy. It leaves every decision to NCCL, so
// loading libncclbpf.so with no configuration changes nothing; it also
// measures the cost of the plugin path itself.
#include "ncclbpf.h"

SEC("tuner")
int noop(struct ncclbpf_tuner_ctx *ctx)
{
	return NCCLBPF_TUNER_APPLY; /* outputs untouched: -1, -1, 0 = NCCL decides */
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

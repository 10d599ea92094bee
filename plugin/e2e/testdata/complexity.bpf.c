// A policy built to make the verifier work as long as it can: every
// program unrolls a loop whose bound it cannot prove, through branches that
// give each iteration a different state. The plugin must refuse it within a
// bounded time (the bundle's verification budget), not stall NCCL's init.
#include "ncclbpf.h"

static __attribute__((noinline)) __u64 churn(__u64 n)
{
	__u64 a = 0, b = 0, c = 0, d = 0;

	for (__u64 i = 0; i < n; i++) {
		if (i & 1)
			a += i;
		if (i & 2)
			b ^= i;
		if (i & 4)
			c += 3;
		if (i & 8)
			d |= i;
	}
	return a + b + c + d;
}

SEC("tuner")
int tune(struct ncclbpf_tuner_ctx *ctx)
{
	return churn(ctx->n_bytes) == 12345;
}

SEC("tuner/chunk_size")
int chunk(struct ncclbpf_tuner_ctx *ctx)
{
	return churn(ctx->n_bytes + 1) == 12345 ? 1 : 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

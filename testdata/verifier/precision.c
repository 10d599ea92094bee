// Natural C that must verify: what clang -O2 emits for policies written
// by people who are not eBPF experts.
#include "../../include/ncclbpf.h"

struct {
	__uint(type, 2); /* BPF_MAP_TYPE_ARRAY */
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} table SEC(".maps");

volatile const int bias = 0;
volatile const __u32 weights[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* An int index checked on both sides, then used to index an array:
 * clang compares the 32-bit value signed, then sign-extends it. */
SEC("tuner")
int ok_int_index_checked_both_sides(struct ncclbpf_tuner_ctx *ctx)
{
	int idx = ctx->num_pipe_ops + bias;

	if (idx < 0 || idx >= 8)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->n_channels = weights[idx];
	return NCCLBPF_TUNER_APPLY;
}

/* The same with a signed value coming from arithmetic. */
SEC("tuner")
int ok_int_difference_checked(struct ncclbpf_tuner_ctx *ctx)
{
	int idx = ctx->max_ranks_per_nvl_domain - ctx->min_ranks_per_nvl_domain;

	if (idx < 0)
		return NCCLBPF_TUNER_DEFAULT;
	if (idx > 7)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->n_channels = weights[idx];
	return NCCLBPF_TUNER_APPLY;
}

/* A loop counter whose address is taken (passed to a helper as a key):
 * it lives in a 4-byte stack slot. */
SEC("tuner")
int ok_counter_address_taken(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 sum = 0;

	for (__u32 i = 0; i < 8; i++) {
		__u64 *v = bpf_map_lookup_elem(&table, &i);

		if (v)
			sum += *v;
	}
	ctx->n_channels = sum > 32 ? 32 : (int)sum;
	return NCCLBPF_TUNER_APPLY;
}

/* Argmin over every algorithm and protocol of the cost table. */
SEC("tuner")
int ok_argmin_cost_table(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 best = 0xffffffff;
	int ba = -1, bp = -1;

	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++) {
		for (int p = 0; p < NCCLBPF_NUM_PROTOCOLS; p++) {
			__u32 c = ctx->cost[a][p];

			if (!(ctx->avail_mask & (1u << (a * NCCLBPF_NUM_PROTOCOLS + p))))
				continue;
			if (c < best) {
				best = c;
				ba = a;
				bp = p;
			}
		}
	}
	if (ba < 0)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = ba;
	ctx->protocol = bp;
	return NCCLBPF_TUNER_APPLY;
}

/* Argmin over the algorithms for one protocol. */
SEC("tuner")
int ok_argmin_one_protocol(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 best = 0xffffffff;
	int ba = -1;

	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++) {
		__u32 c = ctx->cost[a][NCCLBPF_PROTO_SIMPLE];

		if ((int)c >= 0 && c < best) {
			best = c;
			ba = a;
		}
	}
	if (ba < 0)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = ba;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

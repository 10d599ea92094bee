// Ordinary C that must verify, and its unsafe neighbours: a helper
// function that returns nothing, a bpf_printk format built on the stack,
// and the range check clang makes of (unsigned)(i - lo) < n.
#include "../../include/ncclbpf.h"

volatile const int bias = 0;
volatile const __u32 weights[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* --- functions that return nothing ------------------------------------ */

static __attribute__((noinline)) void set_channels(struct ncclbpf_tuner_ctx *ctx, int n)
{
	if (n > 0)
		ctx->n_channels = n;
}

static __attribute__((noinline)) void set_both(struct ncclbpf_tuner_ctx *ctx, int n)
{
	set_channels(ctx, n);
	if (n > 4)
		ctx->protocol = NCCLBPF_PROTO_SIMPLE;
}

/* A void helper: r0 holds nothing when it returns, and nobody reads it. */
SEC("tuner")
int ok_void_function(struct ncclbpf_tuner_ctx *ctx)
{
	set_channels(ctx, ctx->num_pipe_ops + bias);
	return NCCLBPF_TUNER_APPLY;
}

/* A void helper calling another, then an early return. */
SEC("tuner")
int ok_void_function_nested(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_ranks < 2)
		return NCCLBPF_TUNER_DEFAULT;
	set_both(ctx, ctx->num_pipe_ops + bias);
	return NCCLBPF_TUNER_APPLY;
}

/* A void helper, then the program's own result depends on its effect. */
SEC("tuner")
int ok_void_function_then_read_back(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 n = ctx->num_pipe_ops + bias;

	set_channels(ctx, n & 7);
	return n & 7 ? NCCLBPF_TUNER_APPLY : NCCLBPF_TUNER_DEFAULT;
}

/* --- a printk format on the stack -------------------------------------- */

/* One conversion: clang stores "n=%u" as a 4-byte and a 1-byte store. */
SEC("tuner")
int ok_stack_format_one_value(struct ncclbpf_tuner_ctx *ctx)
{
	char fmt[] = "n=%u";

	bpf_trace_printk(fmt, sizeof(fmt), ctx->n_ranks);
	return NCCLBPF_TUNER_DEFAULT;
}

/* Two conversions in a longer format (8-, 8- and 2-byte stores, then the
 * terminating 0 as a 1-byte store). */
SEC("tuner")
int ok_stack_format_two_values(struct ncclbpf_tuner_ctx *ctx)
{
	char fmt[] = "coll=%u bytes=%llu";

	bpf_trace_printk(fmt, sizeof(fmt), ctx->coll_type, ctx->n_bytes);
	return NCCLBPF_TUNER_DEFAULT;
}

/* No conversion: no value register is formatted. */
SEC("tuner")
int ok_stack_format_no_value(struct ncclbpf_tuner_ctx *ctx)
{
	char fmt[] = "hi!";

	bpf_trace_printk(fmt, sizeof(fmt));
	return NCCLBPF_TUNER_DEFAULT;
}

/* Three conversions, three values, 2-byte pieces. */
SEC("tuner")
int ok_stack_format_three_values(struct ncclbpf_tuner_ctx *ctx)
{
	char fmt[] = "%d%d%d";

	bpf_trace_printk(fmt, sizeof(fmt), ctx->n_ranks, ctx->n_nodes, ctx->coll_type);
	return NCCLBPF_TUNER_DEFAULT;
}

/* Two conversions but one value: the helper formats r4, never set. */
SEC("tuner")
int bad_stack_format_missing_value(struct ncclbpf_tuner_ctx *ctx)
{
	char fmt[] = "a=%u b=%u";

	bpf_trace_printk(fmt, sizeof(fmt), ctx->n_ranks); /* ERROR E010 */
	return NCCLBPF_TUNER_DEFAULT;
}

/* A byte of the format comes from the context: it may be '%', so the
 * format is not known and every value register must be set. */
SEC("tuner")
int bad_stack_format_with_unknown_byte(struct ncclbpf_tuner_ctx *ctx)
{
	char fmt[] = "n=%u ";

	fmt[4] = (char)ctx->n_nodes;
	bpf_trace_printk(fmt, sizeof(fmt), ctx->n_ranks); /* ERROR E010 */
	return NCCLBPF_TUNER_DEFAULT;
}

/* --- the range check (unsigned)(i - lo) < n ---------------------------- */

/* clang compares a 32-bit copy of i - 2 and indexes with i itself. */
SEC("tuner")
int ok_range_check_subtract(struct ncclbpf_tuner_ctx *ctx)
{
	int i = ctx->num_pipe_ops;

	if ((unsigned)(i - 2) < 6)
		ctx->n_channels = weights[i];
	return NCCLBPF_TUNER_APPLY;
}

/* The same with an index computed in 32 bits, and the check written as a
 * switch of consecutive cases (clang emits the same subtract-and-compare). */
SEC("tuner")
int ok_range_check_difference(struct ncclbpf_tuner_ctx *ctx)
{
	int i = ctx->max_ranks_per_nvl_domain - ctx->min_ranks_per_nvl_domain;

	if ((unsigned)(i - 1) <= 6)
		ctx->n_channels = weights[i];
	return NCCLBPF_TUNER_APPLY;
}

/* The complement: the index is used where the check fails (i in [4, 8)
 * is excluded, i < 4 remains). */
SEC("tuner")
int ok_range_check_outside(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 i = ctx->num_pipe_ops;

	if (i >= 8)
		return NCCLBPF_TUNER_DEFAULT;
	if ((unsigned)(i - 4) < 4)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->n_channels = weights[i + 4];
	return NCCLBPF_TUNER_APPLY;
}

/* One too many: i may be 8. */
SEC("tuner")
int bad_range_check_one_too_many(struct ncclbpf_tuner_ctx *ctx)
{
	int i = ctx->num_pipe_ops;

	if ((unsigned)(i - 2) < 7)
		ctx->n_channels = weights[i]; /* ERROR E014 */
	return NCCLBPF_TUNER_APPLY;
}

/* An added constant: (unsigned)(i + 3) < 8 holds for i in [-3, 4], and
 * i = -3 reads before the array. */
SEC("tuner")
int bad_range_check_negative_side(struct ncclbpf_tuner_ctx *ctx)
{
	int i = ctx->num_pipe_ops + bias;

	if ((unsigned)(i + 3) < 8)
		ctx->n_channels = weights[i]; /* ERROR E014 */
	return NCCLBPF_TUNER_APPLY;
}

/* The index changes after the check. */
SEC("tuner")
int bad_range_check_then_changed(struct ncclbpf_tuner_ctx *ctx)
{
	int i = ctx->num_pipe_ops;

	if ((unsigned)(i - 2) < 6) {
		i += ctx->n_nodes;
		ctx->n_channels = weights[i]; /* ERROR E014 */
	}
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

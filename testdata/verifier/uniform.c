// Rank uniformity: a tuner decision (algorithm, protocol, n_channels, the
// chunk size, the return value) must depend on rank-uniform data only.
// The programs of this file are verified together, as one bundle: maps
// that a program writes are rank-local for all of them.
#include "../../include/ncclbpf.h"
#include "../../include/ncclbpf_profiler.h"

struct {
	__uint(type, 2); /* BPF_MAP_TYPE_ARRAY */
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} measured SEC(".maps"); /* written by the profiler program below */

struct {
	__uint(type, 1); /* BPF_MAP_TYPE_HASH */
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} memo SEC(".maps"); /* written by a tuner program below */

struct {
	__uint(type, 2);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} table SEC(".maps"); /* filled at load, written by no program */

struct {
	__uint(type, 2);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
	__uint(map_flags, 1 << 7); /* BPF_F_RDONLY_PROG: agreed, written by the control plane */
} agreed SEC(".maps");

volatile const __u64 window = 1 << 20;
volatile const __u32 channels_by_size[4] = {2, 4, 8, 16};

#define NOINLINE static __attribute__((noinline))

/* ---- sources, direct flows ---- */

SEC("tuner")
int bad_channels_from_clock(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 t = bpf_ktime_get_ns();

	ctx->n_channels = (t & 7) + 1; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_algorithm_from_random(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algorithm = bpf_get_prandom_u32() & 1; /* ERROR E033 */
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_protocol_from_cpu(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->protocol = bpf_get_smp_processor_id() % 3; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_channels_from_local_field(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = ctx->reg_buff > 0 ? 4 : 2; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_return_from_clock(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algorithm = NCCLBPF_ALGO_RING;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return bpf_ktime_get_ns() & 1; /* ERROR E033 */
}

SEC("tuner/chunk_size")
int bad_chunk_from_clock(struct ncclbpf_chunk_ctx *ctx)
{
	ctx->new_chunk_size = 512 << (bpf_ktime_get_ns() & 3); /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

/* ---- implicit flows ---- */

SEC("tuner")
int bad_channels_under_clock_branch(struct ncclbpf_tuner_ctx *ctx)
{
	int ch = 2;

	if (bpf_ktime_get_ns() & 1)
		ch = 4;
	asm volatile("" : "+r"(ch));
	ctx->n_channels = ch; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_decision_only_on_one_side(struct ncclbpf_tuner_ctx *ctx)
{
	if (bpf_get_prandom_u32() & 1)
		ctx->algorithm = NCCLBPF_ALGO_TREE; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_return_under_local_branch(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algorithm = NCCLBPF_ALGO_RING;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	if (ctx->reg_buff == 1)
		return NCCLBPF_TUNER_DEFAULT;
	return NCCLBPF_TUNER_APPLY;
} /* ERROR E033 (the shared exit returns a value chosen by the branch) */

/* through the stack */
SEC("tuner")
int bad_channels_through_stack(struct ncclbpf_tuner_ctx *ctx)
{
	volatile __u32 saved = bpf_ktime_get_ns() & 15;

	ctx->n_channels = saved + 1; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

/* through a subprogram */
NOINLINE int jitter(int base)
{
	return base + (bpf_get_prandom_u32() & 1);
}

SEC("tuner")
int bad_channels_through_subprogram(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = jitter(4); /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

NOINLINE int pick_by(int cond)
{
	if (cond)
		return NCCLBPF_ALGO_TREE;
	return NCCLBPF_ALGO_RING;
}

SEC("tuner")
int bad_algorithm_from_subprogram_branch(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algorithm = pick_by(ctx->reg_buff); /* ERROR E033 */
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

/* ---- maps ---- */

SEC("profiler/coll_end")
int ok_profiler_measures(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = ctx->func & 7;
	__u64 *v = bpf_map_lookup_elem(&measured, &k);

	if (v)
		*v = ctx->duration_ns; /* local data, freely, in a profiler */
	return 0;
}

SEC("tuner")
int bad_channels_from_profiler_map(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type & 7;
	__u64 *v = bpf_map_lookup_elem(&measured, &k);

	if (!v)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->n_channels = *v > 1000 ? 8 : 4; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_memo_written_by_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->n_bytes >> 20;
	__u32 *a = bpf_map_lookup_elem(&memo, &key);

	if (a) {
		ctx->algorithm = *a & 1;
		ctx->protocol = NCCLBPF_PROTO_SIMPLE; /* ERROR E033 (whether the entry exists differs between ranks) */
		return NCCLBPF_TUNER_APPLY;
	}
	__u32 v = bpf_ktime_get_ns() & 1;
	bpf_map_update_elem(&memo, &key, &v, 0);
	return NCCLBPF_TUNER_DEFAULT;
}

SEC("tuner")
int bad_lookup_key_from_clock(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = bpf_ktime_get_ns() & 7;
	__u32 *c = bpf_map_lookup_elem(&table, &k);

	if (!c)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->n_channels = *c; /* ERROR E033 */
	return NCCLBPF_TUNER_APPLY;
}

/* ---- uniform programs, accepted ---- */

SEC("tuner")
int ok_argmin_cost_table(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 best = 0xffffffff;
	int ba = -1, bp = -1;

	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++)
		for (int p = 0; p < NCCLBPF_NUM_PROTOCOLS; p++) {
			__u32 c = ctx->cost[a][p];

			if ((ctx->avail_mask >> (a * NCCLBPF_NUM_PROTOCOLS + p)) & 1 && c < best) {
				best = c;
				ba = a;
				bp = p;
			}
		}
	if (ba < 0)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = ba;
	ctx->protocol = bp;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int ok_size_window_rodata(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes < window)
		return NCCLBPF_TUNER_DEFAULT;
	__u32 i = ctx->n_bytes >= 64 * window ? 3 : ctx->n_bytes >= 16 * window ? 2 : ctx->n_bytes >= 4 * window ? 1 : 0;
	ctx->n_channels = channels_by_size[i & 3];
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int ok_schedule_on_call_seq(struct ncclbpf_tuner_ctx *ctx)
{
	if ((ctx->call_seq & 1023) < 512)
		ctx->algorithm = NCCLBPF_ALGO_RING;
	else
		ctx->algorithm = NCCLBPF_ALGO_TREE;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int ok_table_filled_at_load(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type & 7;
	__u32 *c = bpf_map_lookup_elem(&table, &k);

	if (!c || *c == 0 || *c > 64)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->n_channels = *c;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int ok_agreed_map(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type & 7;
	__u32 *a = bpf_map_lookup_elem(&agreed, &k);

	if (!a || *a >= NCCLBPF_NUM_ALGORITHMS)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = *a;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int ok_local_values_only_logged(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 t = bpf_ktime_get_ns();

	if (t & 1)
		bpf_printk("odd %llu", t);
	ctx->algorithm = NCCLBPF_ALGO_RING;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int ok_local_branch_then_uniform_decision(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;

	if (ctx->reg_buff == 1) {
		__u64 *v = bpf_map_lookup_elem(&measured, &k);

		if (v)
			bpf_printk("registered, %llu", *v);
	}
	ctx->n_channels = ctx->n_ranks > 8 ? 16 : 8;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// Red team, precision guards: safe, natural clang -O2 output around the
// constructions the red-team programs attack. Each must stay accepted
// when the verifier is made stricter.
#include "../vtest.h"
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct event {
	__u64 ns;
	__u32 op;
	__u32 nranks;
	__u64 bytes;
};

/* An int index checked on both sides: clang compares the 32-bit value
 * (signed) and sign-extends it to index; the check must bound the 64-bit
 * index. */
SEC("vtest")
int ok_int_index_checked_both_sides(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	int i = (int)c->op - 3;

	if (!v)
		return 0;
	if (i < 0 || i >= 8)
		return 0;
	return v->slots[i] & 1;
}

/* A loop counter whose address is taken (the map key): it lives in a
 * 4-byte stack slot, and the loop must still be seen to end. */
SEC("vtest")
int ok_loop_counter_address_taken(struct vtest_ctx *c)
{
	__u64 sum = 0;

	for (__u32 i = 0; i < 16; i++) {
		struct val *v = bpf_map_lookup_elem(&arr, &i);

		if (v)
			sum += v->hits;
	}
	return sum & 1;
}

/* Argmin over the cost table: the cheapest available algorithm for the
 * Simple protocol. clang walks the table with a moving context pointer. */
SEC("tuner")
int ok_argmin_cost_table(struct ncclbpf_tuner_ctx *c)
{
	__u32 best = 0xffffffff;
	int ba = -1;

#pragma clang loop unroll(disable)
	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++) {
		__u32 x = c->cost[a][NCCLBPF_PROTO_SIMPLE];

		if (NCCLBPF_COST_AVAILABLE(x) && x < best) {
			best = x;
			ba = a;
		}
	}
	if (ba < 0)
		return NCCLBPF_TUNER_DEFAULT;
	c->algorithm = ba;
	c->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

/* The same over every cell, as clang lays it out without hints. */
SEC("tuner")
int ok_argmin_all_cells(struct ncclbpf_tuner_ctx *c)
{
	__u32 best = 0xffffffff;
	int cell = -1;

	for (int i = 0; i < NCCLBPF_NUM_ALGORITHMS * NCCLBPF_NUM_PROTOCOLS; i++) {
		__u32 x = ((__u32 *)c->cost)[i];

		if (NCCLBPF_COST_AVAILABLE(x) && x < best) {
			best = x;
			cell = i;
		}
	}
	if (cell < 0)
		return NCCLBPF_TUNER_DEFAULT;
	c->algorithm = cell / NCCLBPF_NUM_PROTOCOLS;
	c->protocol = cell % NCCLBPF_NUM_PROTOCOLS;
	return NCCLBPF_TUNER_APPLY;
}

/* Two lookups joined by a conditional, then used (not subtracted). */
SEC("vtest")
int ok_joined_lookups_used(struct vtest_ctx *c)
{
	__u32 k0 = 0, k1 = 1;
	struct val *a = bpf_map_lookup_elem(&arr, &k0);
	struct val *b = bpf_map_lookup_elem(&arr, &k1);
	struct val *v;

	if (!a || !b)
		return 0;
	v = c->op ? a : b;
	v->hits++;
	return v->slots[c->nranks & 7] & 1;
}

/* A pointer walk to the end of a value with p < end. */
SEC("vtest")
int ok_walk_slots_to_end(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	__u32 sum = 0;

	if (!v)
		return 0;
	for (__u32 *p = v->slots; p < v->slots + 8; p++)
		sum += *p;
	return sum & 0xff;
}

/* A record reserved, filled, submitted; the other path discards. */
SEC("profiler/p2p_end")
int ok_profiler_event(struct ncclbpf_prof_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e)
		return 0;
	e->ns = c->duration_ns;
	e->op = c->func;
	e->nranks = c->n_ranks;
	e->bytes = c->bytes;
	if (c->bytes == 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* A per-peer counter with an atomic add. */
SEC("profiler/p2p_end")
int ok_profiler_peer_counter(struct ncclbpf_prof_ctx *c)
{
	__u32 k = c->peer & 15;
	__u64 *n = bpf_map_lookup_elem(&counters, &k);

	if (n)
		__sync_fetch_and_add(n, c->xfer_bytes);
	return 0;
}

/* bpf_printk with exactly the values its format consumes. */
SEC("vtest")
int ok_printk_one_value(struct vtest_ctx *c)
{
	bpf_printk("op=%u\n", c->op);
	return 0;
}

SEC("vtest")
int ok_printk_no_value(struct vtest_ctx *c)
{
	bpf_printk("hello\n");
	return 0;
}

/* The chunk-size hook: a size picked from the message size. */
SEC("tuner/chunk_size")
int ok_chunk_size(struct ncclbpf_chunk_ctx *c)
{
	if (c->n_bytes < (1 << 20))
		return NCCLBPF_TUNER_DEFAULT;
	c->new_chunk_size = c->chunk_size * 2;
	return NCCLBPF_TUNER_APPLY;
}

/* A clamped signed value as a bit index (cells chosen at run time are
 * tested through avail_mask). */
SEC("tuner")
int ok_signed_clamp_index(struct ncclbpf_tuner_ctx *c)
{
	int p = c->num_pipe_ops;

	if (p > 2)
		p = 2;
	if (p < 0)
		p = 0;
	if (!(c->avail_mask & (1u << NCCLBPF_CELL(NCCLBPF_ALGO_RING, p))))
		return NCCLBPF_TUNER_DEFAULT;
	c->algorithm = NCCLBPF_ALGO_RING;
	c->protocol = p;
	return NCCLBPF_TUNER_APPLY;
}

/* log2 bucket of the size: a loop bounded by the shift. */
SEC("vtest")
int ok_log2_bucket(struct vtest_ctx *c)
{
	__u64 b = c->bytes;
	__u32 i = 0;

	while (b > 1 && i < 63) {
		b >>= 1;
		i++;
	}
	__u32 k = i & 15;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (v)
		v->hits++;
	return i;
}

/* A local array indexed by a masked value. */
SEC("vtest")
int ok_stack_array_index(struct vtest_ctx *c)
{
	__u32 tmp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	volatile __u32 *t = tmp;

	t[c->op & 7] = c->nranks;
	return t[c->flags & 7] & 0xff;
}

/* A key taken from one map value to look up another map. */
SEC("vtest")
int ok_key_from_value(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	__u64 *h;

	if (!v)
		return 0;
	h = bpf_map_lookup_elem(&hash, &v->bytes);
	if (!h)
		return 0;
	return *h & 1;
}

/* A map value pointer handed to a subprogram that updates it. */
NOINLINE int account(struct val *v, __u64 bytes)
{
	v->hits++;
	v->bytes += bytes;
	return v->hits > 100;
}

SEC("vtest")
int ok_subprogram_updates_value(struct vtest_ctx *c)
{
	__u32 k = c->op & 15;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	return account(v, c->bytes);
}

/* A stack struct copied into the ring buffer. */
SEC("vtest")
int ok_ringbuf_output_struct(struct vtest_ctx *c)
{
	struct event e = {};

	e.ns = bpf_ktime_get_ns();
	e.op = c->op;
	e.bytes = c->bytes;
	bpf_ringbuf_output(&rb, &e, sizeof(e), 0);
	return 0;
}

/* The random number modulo the slot count. */
SEC("vtest")
int ok_random_slot(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	v->slots[bpf_get_prandom_u32() % 8] += 1;
	return 0;
}

/* The index of the first matching slot, computed as a pointer difference
 * after a pointer walk: both pointers point into one looked-up value on
 * every path, so their difference is a number. */
SEC("vtest")
int ok_find_slot_index(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	__u32 *p;

	if (!v)
		return 0;
	for (p = v->slots; p < v->slots + 8; p++)
		if (*p == c->op)
			break;
	return (p - v->slots) & 0xff;
}

/* One of two values chosen, then an offset inside it computed from two
 * pointers into the chosen value. */
SEC("vtest")
int ok_offset_within_chosen_value(struct vtest_ctx *c)
{
	__u32 k0 = 0, k1 = 1;
	struct val *a = bpf_map_lookup_elem(&arr, &k0);
	struct val *b = bpf_map_lookup_elem(&arr, &k1);
	struct val *v;
	__u32 *s;

	if (!a || !b)
		return 0;
	v = c->op ? a : b;
	s = &v->slots[c->nranks & 7];
	return ((char *)s - (char *)v) & 0xff;
}

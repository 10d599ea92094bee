// Red team against the product's hooks (tuner, tuner/chunk_size,
// profiler/*), with their real contexts from include/. Each program is
// what an attacker, or a careless policy, would load into NCCL.
#include "../vtest.h"
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u64);
} peers SEC(".maps");

/* Class 1 in a profiler program: the per-peer byte counters of two peers,
 * joined, and their difference (believed 0) added back: a write at an
 * arbitrary heap address on the first send/recv. */
SEC("profiler/p2p_end")
int bad_p2p_counter_difference(struct ncclbpf_prof_ctx *c)
{
	__u64 k1 = c->peer & 7, k2 = c->rank & 7;
	__u64 *a = bpf_map_lookup_elem(&peers, &k1);
	__u64 *b = bpf_map_lookup_elem(&peers, &k2);
	__u64 *p = a, *q = b;
	long d;

	if (!a || !b)
		return 0;
	if (c->is_send) {
		p = b;
		q = a;
	}
	asm volatile("%0 -= %1" : "=r"(d) : "r"(q), "0"(p)); /* ERROR E023 */
	*(__u64 *)((char *)p + d) += c->xfer_bytes;
	return 0;
}

/* The tuner writes a read-only input. */
SEC("tuner")
int bad_tuner_writes_n_bytes(struct ncclbpf_tuner_ctx *c)
{
	c->n_bytes = 0; /* ERROR E016 */
	return NCCLBPF_TUNER_APPLY;
}

/* The tuner's cost table indexed by an unchecked algorithm number. */
SEC("tuner")
int bad_tuner_cost_unchecked_index(struct ncclbpf_tuner_ctx *c)
{
	__u32 a = c->coll_type;

	return c->cost[a][0] >> 31; /* ERROR E023 */
}

/* The tuner returns 2 (neither apply nor default). */
SEC("tuner")
int bad_tuner_returns_two(struct ncclbpf_tuner_ctx *c)
{
	return 2; /* ERROR E027 */
}

/* Ring buffers are not a tuner helper. */
SEC("tuner")
int bad_tuner_uses_ringbuf(struct ncclbpf_tuner_ctx *c)
{
	__u64 x = c->n_bytes;

	bpf_ringbuf_output(&rb, &x, sizeof(x), 0); /* ERROR E019 */
	return NCCLBPF_TUNER_DEFAULT;
}

/* A wait for an input that never changes during the call. */
SEC("tuner")
int bad_tuner_spins_on_input(struct ncclbpf_tuner_ctx *c)
{
	volatile __u32 *n = &c->n_ranks;

	while (*n != 0) /* ERROR E025 */
		;
	return NCCLBPF_TUNER_DEFAULT;
}

/* The output written 8 bytes wide: algorithm and protocol at once. */
SEC("tuner")
int bad_tuner_wide_output_store(struct ncclbpf_tuner_ctx *c)
{
	/* clang splits a misaligned 8-byte store: written as one */
	asm volatile("*(u64 *)(%0 + 148) = %1" : : "r"(c), "r"(0x0000000200000001ull) : "memory"); /* ERROR E017 */
	return NCCLBPF_TUNER_APPLY;
}

/* Past the end of the tuner context. */
SEC("tuner")
int bad_tuner_reads_past_ctx(struct ncclbpf_tuner_ctx *c)
{
	return ((volatile __u32 *)c)[40] & 1; /* ERROR E015 */
}

/* The chunk-size hook writes an input. */
SEC("tuner/chunk_size")
int bad_chunk_writes_chunk_size(struct ncclbpf_chunk_ctx *c)
{
	c->chunk_size = 1; /* ERROR E016 */
	return NCCLBPF_TUNER_APPLY;
}

/* The output of the chunk-size hook written 4 bytes wide. */
SEC("tuner/chunk_size")
int bad_chunk_narrow_output(struct ncclbpf_chunk_ctx *c)
{
	*(volatile __u32 *)&c->new_chunk_size = 4096; /* ERROR E017 */
	return NCCLBPF_TUNER_APPLY;
}

/* Profiler programs observe: every field is read-only. */
SEC("profiler/coll_end")
int bad_profiler_writes_ctx(struct ncclbpf_prof_ctx *c)
{
	c->flags = 0; /* ERROR E016 */
	return 0;
}

/* Profiler programs return 0. */
SEC("profiler/kernel_ch_end")
int bad_profiler_returns_one(struct ncclbpf_prof_ctx *c)
{
	return c->channel_id != 0; /* ERROR E027 */
}

/* An event record written after it was submitted. */
SEC("profiler/proxy_op_end")
int bad_profiler_write_after_submit(struct ncclbpf_prof_ctx *c)
{
	__u64 *e = bpf_ringbuf_reserve(&rb, 16, 0);

	if (!e)
		return 0;
	e[0] = c->seq;
	bpf_ringbuf_submit(e, 0);
	e[1] = c->bytes; /* ERROR E035 */
	return 0;
}

/* A profiler event reserved and never submitted on one path. */
SEC("profiler/p2p_end")
int bad_profiler_leaks_record(struct ncclbpf_prof_ctx *c)
{
	__u64 *e = bpf_ringbuf_reserve(&rb, 16, 0);

	if (!e)
		return 0;
	e[0] = c->seq;
	if (c->is_send)
		return 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
} /* ERROR E030 (at the exit the leaking path reaches) */

/* bpf_printk in a tuner with more conversions than values. */
SEC("tuner")
int bad_tuner_printk_missing_values(struct ncclbpf_tuner_ctx *c)
{
	bpf_printk("coll %d bytes %llu ranks %d\n", c->coll_type); /* ERROR E010 */
	return NCCLBPF_TUNER_DEFAULT;
}

/* A profiler printk whose format consumes two values, one passed. */
SEC("profiler/coll_end")
int bad_profiler_printk_missing_value(struct ncclbpf_prof_ctx *c)
{
	bpf_printk("seq %llu took %llu ns\n", c->seq); /* ERROR E010 */
	return 0;
}

/* The peer counter used as an index into the tuner's own output. */
SEC("profiler/p2p_end")
int bad_profiler_value_as_stack_index(struct ncclbpf_prof_ctx *c)
{
	__u64 k = c->peer;
	__u64 *n = bpf_map_lookup_elem(&peers, &k);
	__u64 buf[4] = {};

	if (!n)
		return 0;
	((volatile __u64 *)buf)[*n] = c->bytes; /* ERROR E013 */
	return 0;
}

/* Class 2 as a naked tuner program (the JIT dies on it with SIGSEGV at
 * address 1): the context pointer moved by 2^63 compares "below" itself
 * by offsets, so the store in the branch believed dead is never checked. */
SEC("tuner")
__attribute__((naked)) int bad_tuner_naked_ctx_wrap(void)
{
	asm volatile("r6 = r1");
	asm volatile("r2 = 0x8000000000000000 ll");
	asm volatile("r6 += r2");
	asm volatile("if r6 < r1 goto +2"); /* ERROR E024 */
	asm volatile("r3 = 1");
	asm volatile("*(u64 *)(r3 + 0) = r3");
	asm volatile("r0 = 0");
	asm volatile("exit");
}

/* Class 4 as a naked profiler program: two records merged, both
 * submitted, the merged one written. */
SEC("profiler/p2p_end")
__attribute__((naked)) int bad_p2p_naked_merged_record(void)
{
	asm volatile("r9 = r1");
	asm volatile("r1 = %[rb] ll; r2 = 16; r3 = 0; call 131" : : [rb] "i"(&rb));
	asm volatile("if r0 == 0 goto +23");
	asm volatile("r7 = r0");
	asm volatile("r1 = %[rb] ll; r2 = 16; r3 = 0; call 131" : : [rb] "i"(&rb));
	asm volatile("if r0 != 0 goto +4");
	asm volatile("r1 = r7; r2 = 0; call 133");
	asm volatile("goto +12");
	asm volatile("r8 = r0");
	asm volatile("r6 = r7");
	asm volatile("r1 = *(u32 *)(r9 + 108)");
	asm volatile("if r1 == 0 goto +1");
	asm volatile("r6 = r8");
	asm volatile("r1 = r7; r2 = 0; call 132");
	asm volatile("r1 = r8; r2 = 0; call 132");
	asm volatile("*(u64 *)(r6 + 0) = 7"); /* ERROR E035 */
	asm volatile("r0 = 0");
	asm volatile("exit");
}

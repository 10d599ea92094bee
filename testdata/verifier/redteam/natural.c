// Red team in plain C: the unsafe constructions of the red-team classes
// as a policy author could write them, without inline assembly.
#include "../vtest.h"

struct event {
	__u64 ns;
	__u64 bytes;
};

/* Class 1: the distance from the chosen element to another one, used as
 * an index from the chosen one (p + (p - a)). */
SEC("vtest")
int bad_c_distance_between_lookups(struct vtest_ctx *c)
{
	__u64 k0 = 1, k1 = 2;
	__u64 *a = bpf_map_lookup_elem(&hash, &k0);
	__u64 *b = bpf_map_lookup_elem(&hash, &k1);
	__u64 *p;
	long d;

	if (!a || !b)
		return 0;
	p = c->op ? a : b;
	d = (char *)p - (char *)a; /* ERROR E023 */
	*(__u64 *)((char *)p + d) = c->bytes;
	return 0;
}

/* Class 1 with array elements: the element count between two entries. */
SEC("vtest")
int bad_c_element_distance(struct vtest_ctx *c)
{
	__u32 k0 = 0, k1 = 15;
	struct val *a = bpf_map_lookup_elem(&arr, &k0);
	struct val *b = bpf_map_lookup_elem(&arr, &k1);
	struct val *lo, *hi;

	if (!a || !b)
		return 0;
	lo = c->flags ? a : b;
	hi = c->flags ? b : a;
	return (hi + (hi - lo))->hits & 1; /* ERROR E023 */
}

/* Class 4: one of two records chosen, both submitted, the chosen one
 * written afterwards. */
SEC("vtest")
int bad_c_chosen_record_after_submit(struct vtest_ctx *c)
{
	struct event *e1 = bpf_ringbuf_reserve(&rb, sizeof(*e1), 0);
	struct event *e2, *e;

	if (!e1)
		return 0;
	e2 = bpf_ringbuf_reserve(&rb, sizeof(*e2), 0);
	if (!e2) {
		bpf_ringbuf_discard(e1, 0);
		return 0;
	}
	e = c->op ? e1 : e2;
	e1->ns = 1;
	e2->ns = 2;
	bpf_ringbuf_submit(e1, 0);
	bpf_ringbuf_submit(e2, 0);
	e->bytes = c->bytes; /* ERROR E035 */
	return 0;
}

/* Class 4: the chosen record discarded a second time. */
SEC("vtest")
int bad_c_chosen_record_discarded_twice(struct vtest_ctx *c)
{
	struct event *e1 = bpf_ringbuf_reserve(&rb, sizeof(*e1), 0);
	struct event *e2, *e;

	if (!e1)
		return 0;
	e2 = bpf_ringbuf_reserve(&rb, sizeof(*e2), 0);
	if (!e2) {
		bpf_ringbuf_discard(e1, 0);
		return 0;
	}
	e = c->nranks > 4 ? e2 : e1;
	e->ns = c->bytes;
	bpf_ringbuf_discard(e1, 0);
	/* clang's line table gives the third call this line */
	bpf_ringbuf_discard(e2, 0); bpf_ringbuf_discard(e, 0); /* ERROR E035 */
	return 0;
}

/* Class 6: a format with three conversions and one value. */
SEC("vtest")
int bad_c_printk_format_longer_than_args(struct vtest_ctx *c)
{
	static const char fmt[] = "op %u nranks %u bytes %llu\n";

	bpf_trace_printk(fmt, sizeof(fmt), c->op); /* ERROR E010 */
	return 0;
}

/* Class 7: a subprogram that returns a 64-bit value; main returns it as
 * its int result, and clang passes r0 through unchanged. The host reads the
 * C int (the low 32 bits, here 1), as the verifier checks it: accepted. */
NOINLINE long wide(__u64 x)
{
	return (long)(x << 32) | 1;
}

SEC("vtest")
int ok_c_return_wide_subprogram(struct vtest_ctx *c)
{
	return wide(c->op);
}

/* `return -1` in an int function is `w0 = -1`: r0 is 0xffffffff, which is
 * -1 as the C int the program returns. The restricted test hook returns
 * -1..1. */
SEC("vtest_restricted")
int ok_c_return_minus_one(struct vtest_ctx *c)
{
	if (c->op > 3)
		return -1;
	return c->op == 1;
}

// Ringbuf records: reserved records must be submitted or discarded once.
#include "vtest.h"

struct event {
	__u64 bytes;
	__u32 op;
	__u32 algo;
};

SEC("vtest")
int bad_ringbuf_leak(struct vtest_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e)
		return 0;
	e->bytes = c->bytes;
	return 0;
} /* ERROR E030 */

SEC("vtest")
int bad_ringbuf_double_submit(struct vtest_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e)
		return 0;
	bpf_ringbuf_submit(e, 0);
	bpf_ringbuf_discard(e, 0); /* ERROR E035 */
	return 0;
}

SEC("vtest")
int bad_ringbuf_use_after_submit(struct vtest_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e)
		return 0;
	bpf_ringbuf_submit(e, 0);
	e->op = 1; /* ERROR E035 */
	return 0;
}

SEC("vtest")
int bad_ringbuf_oob(struct vtest_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&rb, 8, 0);

	if (!e)
		return 0;
	e->op = c->op; /* ERROR E014 */
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("vtest")
int bad_ringbuf_submit_null(struct vtest_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	bpf_ringbuf_submit(e, 0); /* ERROR E012 */
	return 0;
}

SEC("vtest")
int ok_ringbuf_event(struct vtest_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e)
		return 0;
	e->bytes = c->bytes;
	e->op = c->op;
	e->algo = c->algo;
	if (c->op == 7) {
		bpf_ringbuf_discard(e, 0);
		return 1;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("vtest")
int ok_ringbuf_output(struct vtest_ctx *c)
{
	struct event ev = {.bytes = c->bytes, .op = c->op, .algo = c->algo};

	return bpf_ringbuf_output(&rb, &ev, sizeof(ev), 0) == 0;
}

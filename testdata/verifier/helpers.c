// Helper calls: which helpers, and their arguments.
#include "vtest.h"

static long (*bpf_no_such_helper)(void) = (void *)9999;
static long (*bpf_old_probe)(void *dst, __u32 size, const void *src) = (void *)4;

SEC("vtest")
int bad_unknown_helper(struct vtest_ctx *c)
{
	return bpf_no_such_helper() & 1; /* ERROR E018 */
}

SEC("vtest")
int bad_unknown_probe_read(struct vtest_ctx *c)
{
	__u64 x = 0;

	bpf_old_probe(&x, 8, (void *)(long)c->bytes); /* ERROR E018 */
	return x & 1;
}

SEC("vtest_restricted")
int bad_not_allowed_lookup(struct vtest_ctx *c)
{
	__u64 k = 0;

	return bpf_map_lookup_elem(&hash, &k) != 0; /* ERROR E019 */
}

SEC("vtest_restricted")
int bad_not_allowed_printk(struct vtest_ctx *c)
{
	bpf_printk("op %d", c->op); /* ERROR E019 */
	return 0;
}

SEC("vtest_restricted")
int bad_not_allowed_ringbuf(struct vtest_ctx *c)
{
	__u64 x = c->bytes;

	bpf_ringbuf_output(&rb, &x, sizeof(x), 0); /* ERROR E019 */
	return 0;
}

SEC("vtest")
int bad_arg_scalar_map(struct vtest_ctx *c)
{
	__u64 k = 0;

	return bpf_map_lookup_elem((void *)(long)c->bytes, &k) != 0; /* ERROR E020 */
}

SEC("vtest")
int bad_arg_ringbuf_lookup(struct vtest_ctx *c)
{
	__u64 k = 0;

	return bpf_map_lookup_elem(&rb, &k) != 0; /* ERROR E020 */
}

SEC("vtest")
int bad_arg_ctx_key(struct vtest_ctx *c)
{
	return bpf_map_lookup_elem(&hash, &c->bytes) != 0; /* ERROR E020 */
}

SEC("vtest")
int bad_arg_submit_map_value(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	bpf_ringbuf_submit(v, 0); /* ERROR E020 */
	return 0;
}

SEC("vtest")
int bad_arg_reserve_size(struct vtest_ctx *c)
{
	void *r = bpf_ringbuf_reserve(&rb, c->op, 0); /* ERROR E020 */

	if (r)
		bpf_ringbuf_discard(r, 0);
	return 0;
}

SEC("vtest")
int bad_arg_flags_pointer(struct vtest_ctx *c)
{
	__u64 k = 0, v = 1;

	bpf_map_update_elem(&hash, &k, &v, (__u64)(long)&k); /* ERROR E020 */
	return 0;
}

SEC("vtest")
int bad_arg_output_size(struct vtest_ctx *c)
{
	__u64 x = c->bytes;

	bpf_ringbuf_output(&rb, &x, c->op, 0); /* ERROR E020 */
	return 0;
}

SEC("vtest")
int ok_helpers(struct vtest_ctx *c)
{
	__u64 k = c->bytes, now = bpf_ktime_get_ns();

	bpf_map_update_elem(&hash, &k, &now, BPF_ANY);
	bpf_map_delete_elem(&hash, &k);
	bpf_printk("op %d cpu %d", c->op, bpf_get_smp_processor_id());
	return bpf_get_prandom_u32() & 1;
}

SEC("vtest_restricted")
int ok_restricted(struct vtest_ctx *c)
{
	return (bpf_ktime_get_ns() ^ bpf_get_prandom_u32()) & 1;
}

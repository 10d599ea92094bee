// Stack bounds and initialization.
#include "vtest.h"

SEC("vtest")
int bad_stack_var_index(struct vtest_ctx *c)
{
	__u64 a[4];

	a[0] = c->bytes;
	a[1] = c->op;
	a[2] = c->nranks;
	a[3] = c->flags;
	return a[c->op & 7] & 1; /* ERROR E013 */
}

SEC("vtest")
int bad_stack_unbounded_index(struct vtest_ctx *c)
{
	__u32 a[8] = {};

	a[c->op] = 1; /* ERROR E013 */
	return a[0];
}

SEC("vtest")
int bad_stack_below_frame(struct vtest_ctx *c)
{
	__u64 r;

	asm volatile("%0 = *(u64 *)(r10 - 520)" : "=r"(r)); /* ERROR E013 */
	return r & 1;
}

SEC("vtest")
int bad_stack_above_frame(struct vtest_ctx *c)
{
	asm volatile("*(u64 *)(r10 + 0) = r1" ::: "memory"); /* ERROR E013 */
	return 0;
}

SEC("vtest")
int bad_uninit_key(struct vtest_ctx *c)
{
	__u64 key;
	__u64 *v;

	if (c->op == 1)
		key = 7;
	v = bpf_map_lookup_elem(&hash, &key); /* ERROR E011 */
	return v ? 1 : 0;
}

struct padded {
	__u32 a;
	__u64 b;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct padded);
	__type(value, __u64);
} padded_hash SEC(".maps");

SEC("vtest")
int bad_uninit_padding(struct vtest_ctx *c)
{
	struct padded k;
	__u64 *v;

	k.a = c->op;
	k.b = c->bytes;
	v = bpf_map_lookup_elem(&padded_hash, &k); /* ERROR E011 */
	return v ? 1 : 0;
}

SEC("vtest")
int bad_uninit_value(struct vtest_ctx *c)
{
	__u64 k = 1;
	struct val v;

	v.hits = 1;
	bpf_map_update_elem(&arr, &k, &v, BPF_ANY); /* ERROR E011 */
	return 0;
}

SEC("vtest")
int bad_uninit_read(struct vtest_ctx *c)
{
	__u64 r;

	asm volatile("%0 = *(u64 *)(r10 - 16)" : "=r"(r)); /* ERROR E011 */
	return r & 1;
}

SEC("vtest")
int bad_uninit_printk_buf(struct vtest_ctx *c)
{
	char fmt[16];

	fmt[0] = 'x';
	bpf_trace_printk(fmt, sizeof(fmt)); /* ERROR E011 */
	return 0;
}

SEC("vtest")
int ok_stack_array(struct vtest_ctx *c)
{
	__u64 a[4];

	a[0] = c->bytes;
	a[1] = c->op;
	a[2] = c->nranks;
	a[3] = c->flags;
	return a[c->op & 3] & 1;
}

SEC("vtest")
int ok_padded_key_zeroed(struct vtest_ctx *c)
{
	struct padded k;
	__u64 *v;

	__builtin_memset(&k, 0, sizeof(k));
	k.a = c->op;
	k.b = c->bytes;
	v = bpf_map_lookup_elem(&padded_hash, &k);
	return v ? 1 : 0;
}

// Pointer arithmetic and comparisons.
#include "vtest.h"

SEC("vtest")
int bad_arith_nullable(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	__u32 *s = &v->slots[2]; /* ERROR E022 */

	asm volatile("" : "+r"(s));
	if (!v)
		return 0;
	return *s & 1;
}

SEC("vtest")
int bad_arith_nullable_ringbuf(struct vtest_ctx *c)
{
	char *e = bpf_ringbuf_reserve(&rb, 16, 0);
	char *p = e + 8; /* ERROR E022 */

	asm volatile("" : "+r"(p));
	if (!e)
		return 0;
	*p = 1;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("vtest")
int bad_arith_multiply(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	return *(__u8 *)((long)v * 2) & 1; /* ERROR E023 */
}

SEC("vtest")
int bad_arith_mask_pointer(struct vtest_ctx *c)
{
	__u64 x = 0;

	return *(__u8 *)((long)&x | c->op) & 1; /* ERROR E023 */
}

SEC("vtest")
int bad_arith_map_handle(struct vtest_ctx *c)
{
	return *(volatile __u32 *)((char *)&arr + 8) & 1; /* ERROR E028 */
}

SEC("vtest")
int bad_arith_scalar_deref(struct vtest_ctx *c)
{
	return *(volatile __u32 *)(long)c->bytes & 1; /* ERROR E028 */
}

SEC("vtest")
int bad_compare_pointers(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *a = bpf_map_lookup_elem(&arr, &k);
	struct val *b = bpf_map_lookup_elem(&arr, &k);

	if (!a || !b) /* ERROR E024 */
		return 0;
	return a < b;
}

SEC("vtest")
int bad_compare_pointer_scalar(struct vtest_ctx *c)
{
	__u64 x = 0;

	if ((long)&x > (long)c->bytes) /* ERROR E024 */
		return 1;
	return 0;
}

SEC("vtest")
int ok_pointer_walk(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	__u32 *p;
	__u32 n = 0;

	if (!v)
		return 0;
	p = v->slots;
	n += p[1];
	p += 2;
	n += p[5];
	return n & 1;
}

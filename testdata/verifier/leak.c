// Pointers must not leave the program.
#include "vtest.h"

SEC("vtest")
int bad_leak_stack_to_map(struct vtest_ctx *c)
{
	__u64 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hash, &k);

	if (!v)
		return 0;
	*v = (__u64)(long)&k; /* ERROR E021 */
	return 0;
}

SEC("vtest")
int bad_leak_ctx_to_map(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	v->bytes = (__u64)(long)c; /* ERROR E021 */
	return 0;
}

SEC("vtest")
int bad_leak_to_ctx(struct vtest_ctx *c)
{
	__u64 k = 0;

	c->algo = (__u32)(long)&k; /* ERROR E021 */
	return 0;
}

SEC("vtest")
int bad_leak_map_value_to_ctx_cost(struct vtest_ctx *c)
{
	__u64 x = 0;

	*(volatile __u64 *)&c->cost[0] = (__u64)(long)&x; /* ERROR E017 */
	return 0;
}

SEC("vtest")
int bad_leak_return_ctx(struct vtest_ctx *c)
{
	return (long)c; /* ERROR E021 */
}

SEC("vtest")
int bad_leak_return_map_value(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	return (long)v;
} /* ERROR E021 */

SEC("vtest")
int bad_leak_to_ringbuf(struct vtest_ctx *c)
{
	__u64 *e = bpf_ringbuf_reserve(&rb, 8, 0);

	if (!e)
		return 0;
	*e = (__u64)(long)c; /* ERROR E021 */
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("vtest")
int bad_leak_key_holds_pointer(struct vtest_ctx *c)
{
	__u64 k = (__u64)(long)c;

	return bpf_map_lookup_elem(&hash, &k) != 0; /* ERROR E021 */
}

// Null checks on map lookups.
#include "vtest.h"

SEC("vtest")
int bad_null_deref(struct vtest_ctx *c)
{
	__u64 k = c->bytes;
	__u64 *v = bpf_map_lookup_elem(&hash, &k);

	return *v & 1; /* ERROR E012 */
}

SEC("vtest")
int bad_null_write(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	v->hits = 1; /* ERROR E012 */
	return 0;
}

SEC("vtest")
int bad_null_wrong_check(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *a = bpf_map_lookup_elem(&arr, &k);
	struct val *b = bpf_map_lookup_elem(&arr, &k);

	if (!a)
		return 0;
	return b->hits & 1; /* ERROR E012 */
}

SEC("vtest")
int bad_null_after_branch(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (c->op == 3 && !v)
		return 0;
	return v->slots[1] & 1; /* ERROR E012 */
}

SEC("vtest")
int bad_null_helper_arg(struct vtest_ctx *c)
{
	__u64 k = 1;
	__u64 *v = bpf_map_lookup_elem(&hash, &k);

	bpf_map_update_elem(&hash, &k, v, BPF_ANY); /* ERROR E012 */
	return 0;
}

SEC("vtest")
int ok_null_checked(struct vtest_ctx *c)
{
	__u64 k = c->bytes;
	__u64 *v = bpf_map_lookup_elem(&hash, &k);
	__u64 *copy = v;

	if (!v)
		return 0;
	return *copy & 1;
}

// Map value bounds, constant and variable offsets.
#include "vtest.h"

SEC("vtest")
int bad_oob_const(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	return ((volatile __u32 *)v)[12] & 1; /* ERROR E014 */
}

SEC("vtest")
int bad_oob_const_write(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	((volatile __u64 *)v)[6] = 1; /* ERROR E014 */
	return 0;
}

SEC("vtest")
int bad_oob_negative(struct vtest_ctx *c)
{
	__u64 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hash, &k);

	if (!v)
		return 0;
	return ((volatile __u32 *)v)[-1] & 1; /* ERROR E014 */
}

SEC("vtest")
int bad_oob_unbounded_index(struct vtest_ctx *c)
{
	__u32 k = 0;
	__u32 i = c->op;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	return v->slots[i] & 1; /* ERROR E014 */
}

SEC("vtest")
int bad_oob_off_by_one(struct vtest_ctx *c)
{
	__u32 k = 0;
	__u32 i = c->op;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v || i > 8)
		return 0;
	v->slots[i] = 1; /* ERROR E014 */
	return 0;
}

SEC("vtest")
int bad_oob_signed_index(struct vtest_ctx *c)
{
	__u32 k = 0;
	int i = (int)c->op;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v || i >= 8)
		return 0;
	return v->slots[i] & 1; /* ERROR E014 */
}

SEC("vtest")
int bad_oob_wide_read(struct vtest_ctx *c)
{
	__u64 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hash, &k);

	if (!v)
		return 0;
	return ((volatile __u32 *)v)[c->flags & 3] & 1; /* ERROR E014 */
}

SEC("vtest")
int bad_oob_loop(struct vtest_ctx *c)
{
	__u32 k = 0, sum = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	for (int i = 0; i <= 8; i++)
		sum += ((volatile __u32 *)v->slots)[i]; /* ERROR E014 */
	return sum & 1;
}

SEC("vtest")
int ok_bounded_index(struct vtest_ctx *c)
{
	__u32 k = 0;
	__u32 i = c->op;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v || i >= 8)
		return 0;
	v->slots[i] += 1;
	return v->slots[i & 7] & 1;
}

SEC("vtest")
int ok_masked_index(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	v->slots[c->flags & 7] = c->op;
	return 0;
}

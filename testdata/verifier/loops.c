// Termination: bounded loops are accepted, loops that may not end are not.
#include "vtest.h"

SEC("vtest")
int bad_loop_forever(struct vtest_ctx *c)
{
	volatile __u32 n = 0; /* counted exactly: no state repeats, the budget ends it */

	for (;;) /* ERROR E026 */
		n++;
	return 0;
}

SEC("vtest")
int bad_loop_wait_flag(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	while (*(volatile __u64 *)&v->hits != 0) /* ERROR E025 */
		;
	return 1;
}

SEC("vtest")
int bad_loop_unbounded_count(struct vtest_ctx *c)
{
	__u64 sum = 0;

	for (__u64 i = 0; i < c->bytes; i++) /* ERROR E026 */
		sum += i ^ c->op;
	return sum & 1;
}

SEC("vtest")
int bad_loop_wrong_direction(struct vtest_ctx *c)
{
	__u32 k = 0, n = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	for (__u32 i = 0; i < 8; i *= 2) /* ERROR E025 */
		n += ((volatile __u32 *)v->slots)[i];
	return n & 1;
}

SEC("vtest")
int ok_loop_sum(struct vtest_ctx *c)
{
	__u32 k = 0, sum = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	for (int i = 0; i < 8; i++)
		sum += v->slots[i];
	return sum & 0xff;
}

SEC("vtest")
int ok_loop_bounded_by_ctx(struct vtest_ctx *c)
{
	__u32 k = 0, sum = 0;
	__u32 n = c->nranks;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	if (n > 8)
		n = 8;
	for (__u32 i = 0; i < n; i++)
		sum += v->slots[i];
	return sum & 0xff;
}

SEC("vtest")
int ok_loop_argmin_cost(struct vtest_ctx *c)
{
	__u32 best = 0, bestc = 0xffffffff;

	for (int i = 0; i < 8; i++) {
		__u32 x = c->cost[i];
		if (x < bestc) {
			bestc = x;
			best = i;
		}
	}
	c->algo = best;
	return best;
}

SEC("vtest")
int ok_loop_shift(struct vtest_ctx *c)
{
	__u64 b = c->bytes;
	__u32 log = 0;

	while (b > 1) {
		b >>= 1;
		log++;
	}
	return log & 63;
}

SEC("vtest")
int ok_loop_nested(struct vtest_ctx *c)
{
	__u32 k = 0, sum = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v)
		return 0;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			sum += v->slots[(i + j) & 7] * (i + 1);
	return sum & 0xff;
}

// Context layout, access rights and widths.
#include "vtest.h"

SEC("vtest")
int bad_ctx_hidden(struct vtest_ctx *c)
{
	return c->hidden & 1; /* ERROR E015 */
}

SEC("vtest")
int bad_ctx_past_end(struct vtest_ctx *c)
{
	return ((volatile __u32 *)c)[20] & 1; /* ERROR E015 */
}

SEC("vtest")
int bad_ctx_padding(struct vtest_ctx *c)
{
	return c->pad & 1; /* ERROR E015 */
}

SEC("vtest")
int bad_ctx_write_readonly(struct vtest_ctx *c)
{
	c->nranks = 1; /* ERROR E016 */
	return 0;
}

SEC("vtest")
int bad_ctx_read_writeonly(struct vtest_ctx *c)
{
	return c->proto & 1; /* ERROR E016 */
}

SEC("vtest")
int bad_ctx_write_bytes(struct vtest_ctx *c)
{
	c->bytes = 0; /* ERROR E016 */
	return 0;
}

SEC("vtest")
int bad_ctx_narrow_read(struct vtest_ctx *c)
{
	return ((volatile __u8 *)c)[4] & 1; /* ERROR E017 */
}

SEC("vtest")
int bad_ctx_half_u64(struct vtest_ctx *c)
{
	return ((volatile __u32 *)c)[3] & 1; /* ERROR E017 */
}

SEC("vtest")
int bad_ctx_wide_write(struct vtest_ctx *c)
{
	*(volatile __u64 *)&c->algo = 0; /* ERROR E017 */
	return 0;
}

SEC("vtest")
int bad_ctx_variable_offset(struct vtest_ctx *c)
{
	return c->cost[c->op & 7] & 1; /* ERROR E023 */
}

SEC("vtest")
int ok_ctx_fields(struct vtest_ctx *c)
{
	__u32 best = 0;

	if (c->bytes > 4096 && c->nranks > 2)
		best = 1;
	c->algo = best + c->small;
	c->proto = c->flags & 3;
	c->cost[3] = c->cost[2] + 1;
	return c->algo & 1;
}

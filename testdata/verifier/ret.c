// Return ranges.
#include "vtest.h"

SEC("vtest")
int bad_ret_too_big(struct vtest_ctx *c)
{
	return 256; /* ERROR E027 */
}

SEC("vtest")
int bad_ret_unbounded(struct vtest_ctx *c)
{
	return c->op; /* ERROR E027 */
}

SEC("vtest")
int bad_ret_negative(struct vtest_ctx *c)
{
	if (c->op == 1)
		return -1;
	return c->op == 3;
} /* ERROR E027 */

SEC("vtest_restricted")
int bad_ret_restricted(struct vtest_ctx *c)
{
	return c->op & 3; /* ERROR E027 */
}

SEC("vtest")
int ok_ret_masked(struct vtest_ctx *c)
{
	return c->op & 0xff;
}

SEC("vtest_restricted")
int ok_ret_minus_one(struct vtest_ctx *c)
{
	if (c->op > 3)
		return -1;
	return c->op == 2;
}

// SPDX-License-Identifier: MIT
/* MCPU: v4
 * v4.c: built with -mcpu=v4, so clang may use the v4 instructions
 * (sign-extending loads and moves, signed division, byte swaps, gotol).
 */
#include "common.h"

volatile const __s32 divisor = -3;

static __attribute__((noinline)) __s64 scale(__s64 v)
{
	return v / divisor;
}

SEC("tuner")
int tuner_v4(struct ctx *c)
{
	__s8 small = (__s8)c->coll;
	__s64 wide = small;

	wide = scale(wide + (__s16)c->nranks);
	c->algo = __builtin_bswap32((__u32)wide);
	return (int)(wide & 1);
}

char LICENSE[] SEC("license") = "MIT";

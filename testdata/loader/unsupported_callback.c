// SPDX-License-Identifier: MIT
/* bpf_loop takes the address of a callback function. */
#include "common.h"

static long step(__u32 i, void *data)
{
	*(__u64 *)data += i;
	return 0;
}

SEC("tuner")
int uses_callback(struct ctx *c)
{
	__u64 sum = 0;

	bpf_loop(8, step, &sum, 0);
	return (int)sum;
}

char LICENSE[] SEC("license") = "MIT";

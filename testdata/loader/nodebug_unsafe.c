// SPDX-License-Identifier: MIT
/* Built without -g (-g0 in scripts/bpf-objects.txt): loads, but a
 * rejection has no source line to show. */
#include "common.h"

SEC("tuner")
int deref_scalar(struct ctx *c)
{
	__u64 *p = (__u64 *)(long)c->bytes;

	return *p & 1;
}

char LICENSE[] SEC("license") = "MIT";

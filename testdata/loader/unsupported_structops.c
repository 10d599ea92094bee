// SPDX-License-Identifier: MIT
/* A struct_ops map: kernel callbacks implemented in eBPF. */
#include "common.h"

struct ops {
	int (*decide)(struct ctx *c);
};

SEC("struct_ops/decide")
int decide(struct ctx *c)
{
	return 1;
}

SEC(".struct_ops")
struct ops my_ops = {
	.decide = (void *)decide,
};

char LICENSE[] SEC("license") = "MIT";

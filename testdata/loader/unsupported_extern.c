// SPDX-License-Identifier: MIT
/* A call to a function defined in another object (static linking). */
#include "common.h"

extern int defined_elsewhere(__u64 bytes);

SEC("tuner")
int uses_extern(struct ctx *c)
{
	return defined_elsewhere(c->bytes);
}

char LICENSE[] SEC("license") = "MIT";

// SPDX-License-Identifier: MIT
/* TARGET: bpfeb
 * bigendian.c: a valid program built for big-endian eBPF (-target bpfeb),
 * which the loader refuses: the runtime is little-endian.
 */
#include "common.h"

__u64 counter = 1;

SEC("tuner")
int tuner_be(struct ctx *c)
{
	counter += c->bytes;
	return 0;
}

char LICENSE[] SEC("license") = "MIT";

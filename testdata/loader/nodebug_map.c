// SPDX-License-Identifier: MIT
/* Built without -g (-g0 in scripts/bpf-objects.txt): a BTF-defined map
 * and no BTF to describe it. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

SEC("tuner")
int count(struct ctx *c)
{
	__u32 k = c->coll & 3;
	__u64 *v = bpf_map_lookup_elem(&counts, &k);

	if (v)
		*v += 1;
	return 0;
}

char LICENSE[] SEC("license") = "MIT";

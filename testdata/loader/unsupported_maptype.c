// SPDX-License-Identifier: MIT
/* A map type the runtime does not implement (a stack). */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, 4);
	__type(value, __u64);
} pending SEC(".maps");

SEC("tuner")
int uses_stack(struct ctx *c)
{
	__u64 v = c->bytes;

	return bpf_map_push_elem(&pending, &v, 0);
}

char LICENSE[] SEC("license") = "MIT";

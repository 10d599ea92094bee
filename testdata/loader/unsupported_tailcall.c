// SPDX-License-Identifier: MIT
/* A tail call through a program array: the map type is refused. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} jump_table SEC(".maps");

SEC("tuner")
int tail(struct ctx *c)
{
	bpf_tail_call(c, &jump_table, 0);
	return 0;
}

char LICENSE[] SEC("license") = "MIT";

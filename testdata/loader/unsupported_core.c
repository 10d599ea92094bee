// SPDX-License-Identifier: MIT
/* A CO-RE field access: the offset would be relocated against kernel BTF. */
#include "common.h"

struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

SEC("tuner")
int uses_core(struct task_struct *t)
{
	return t->pid;
}

char LICENSE[] SEC("license") = "MIT";

// SPDX-License-Identifier: MIT
/* A call to a kernel function (kfunc). */
#include "common.h"

extern void bpf_rcu_read_lock(void) __ksym;

SEC("tuner")
int uses_kfunc(struct ctx *c)
{
	bpf_rcu_read_lock();
	return 0;
}

char LICENSE[] SEC("license") = "MIT";

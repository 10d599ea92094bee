// SPDX-License-Identifier: MIT
/* An extern __kconfig variable, filled from the kernel's configuration. */
#include "common.h"

extern int LINUX_KERNEL_VERSION __kconfig;

SEC("tuner")
int uses_kconfig(struct ctx *c)
{
	return LINUX_KERNEL_VERSION > 0;
}

char LICENSE[] SEC("license") = "MIT";

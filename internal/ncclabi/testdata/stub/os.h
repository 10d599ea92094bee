/* SPDX-License-Identifier: MIT */
/* Stand-in for NCCL's os.h: the profiler's process id type (pid_t on Linux). */
#pragma once
#include <sys/types.h>
typedef pid_t ncclPid_t;

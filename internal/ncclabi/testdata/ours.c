/* SPDX-License-Identifier: MIT */
/* ncclbpf's description of NCCL's plugin ABI: every header the shim and the policies use. */
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"
#include "profiler_abi.h"
#include "net_abi.h"
#include "tuner_abi.h"
#include "env_abi.h"

// SPDX-License-Identifier: MIT
// Every plugin header of one NCCL release (the include path picks the release; the stand-ins in
// stub/ replace the headers that need CUDA or NCCL's build).
#include "nccl_tuner.h"
#include "nccl_profiler.h"
#include "nccl_net.h"
#if __has_include("nccl_env.h")
#include "nccl_env.h"
#endif

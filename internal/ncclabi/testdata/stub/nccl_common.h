/* SPDX-License-Identifier: MIT */
/* Stand-in for NCCL's nccl_common.h (fact sheet section 0.2, 0.3, 2.7): the logger, ncclFunc_t and
 * the net profiler callback, as the plugin headers use them. */
#pragma once
typedef enum { NCCL_LOG_NONE = 0, NCCL_LOG_TRACE = 5 } ncclDebugLogLevel;
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                                  const char *fmt, ...);
typedef enum { ncclFuncBroadcast = 0, ncclNumFuncs = 15 } ncclFunc_t;
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle, int64_t pluginId,
                                               void *extData);

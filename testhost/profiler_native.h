/* SPDX-License-Identifier: MIT */
/*
 * profiler_native.h: native C versions of the profiler example policies, compiled from the same
 * logic headers as the eBPF bundles (policies/latency_stats/latency_stats.h,
 * policies/adaptive/adaptive.h) with plain C maps: the baseline of the benchmark and a reference
 * for the closed loop.
 */
#ifndef TESTHOST_PROFILER_NATIVE_H
#define TESTHOST_PROFILER_NATIVE_H

#include <stdint.h>

/* The adaptive policy's default tunables (policies/adaptive/adaptive.bpf.c). */
#define ADAPTIVE_NCAND_HOST 12
#define ADAPTIVE_ROUNDS_HOST 4
#define ADAPTIVE_PERIOD_HOST 2048
#define ADAPTIVE_CHECK_HOST 16
#define ADAPTIVE_PRUNE_HOST 2
#define ADAPTIVE_MARGIN_HOST 8
#define ADAPTIVE_NCAND ADAPTIVE_NCAND_HOST

struct adaptive_native; /* opaque */

/* latency_native_prog is latency_stats' profiler program as a native `uint64_t fn(void *ctx)`. */
uint64_t latency_native_prog(void *ctx);
/* latency_native_count returns the count of (func, bucket) in its table. */
uint64_t latency_native_count(uint32_t func, uint32_t bucket);

/* adaptive_native_prof is adaptive's profiler program (native); adaptive_native_tune its tuner:
 * returns the candidate or -1 (leave it to NCCL), from the tuner context's inputs (cost: NCCL's
 * contiguous 7x3 table). */
uint64_t adaptive_native_prof(void *ctx);
int adaptive_native_tune(uint64_t comm_id, uint32_t coll, uint64_t bytes, uint32_t avail_mask, const float *cost);

#endif

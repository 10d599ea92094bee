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
#define ADAPTIVE_ROUNDS_HOST 3
#define ADAPTIVE_PERIOD_HOST 8192
#define ADAPTIVE_WINDOW_HOST 96
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
 * contiguous 7x3 table) and the agreed measurements. */
uint64_t adaptive_native_prof(void *ctx);
int adaptive_native_tune(uint64_t comm_id, uint32_t coll, uint64_t bytes, uint64_t call_seq, uint32_t avail_mask,
                         const float *cost);
/* The native policy's agreement (one rank): take copies the local measurements at an agreement
 * point, apply makes that copy the agreed one (at the activation call). */
void adaptive_native_agree_take(void);
void adaptive_native_agree_apply(void);

#endif

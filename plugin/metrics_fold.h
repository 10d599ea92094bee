/* SPDX-License-Identifier: MIT */
/*
 * metrics_fold.h: the hot-path half of the decision counts (metrics.h) and of the per-decision log,
 * included by tuner.c.
 *
 * A decision left to NCCL (the common outcome) costs one increment of a cell indexed by collective
 * and size bucket. Counting any other decision costs a multiply, one load of the key of the entry it hashes to, and a load
 * and a store of its count: the owner thread alone writes the table (as it alone writes the call
 * counters), so no read-modify-write and no fence. A new key is published after its first count
 * (release), so a reader that sees the key sees a count of at least 1. Probing past the first entry
 * and the per-decision log are out of line.
 */
#ifndef NCCLBPF_METRICS_FOLD_H
#define NCCLBPF_METRICS_FOLD_H

#include <stdatomic.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "internal.h"
#include "metrics.h"

#define NB_DTAB_PROBES 8

/* The decision log (NCCLBPF_DECISION_LOG): lines per second, 0 = off. Set once, before the first
 * getCollInfo (tuner.c). */
extern _Atomic uint32_t nb_dlog_rate NB_HIDDEN;
void nb_dlog(struct nb_comm *c, uint64_t seq, int coll, uint64_t n_bytes, uint32_t cell, int ch,
             uint32_t differs) NB_HIDDEN;
void nb_count_probe(struct nb_comm *c, uint64_t key, uint32_t h) NB_HIDDEN;
void nb_dlog_configure(const char *v) NB_HIDDEN;

static inline __attribute__((always_inline)) uint64_t nb_dkey(int coll, uint64_t n_bytes, uint32_t cell, int ch,
                                                              uint32_t differs) {
	uint64_t chs = (uint32_t)ch > 255 ? 255 : (uint32_t)ch;
	return 1ull << 63 | (uint64_t)(uint8_t)coll | (uint64_t)ncclbpf_size_bucket(n_bytes) << 8 | (uint64_t)cell << 16 |
	       chs << 24 | (uint64_t)differs << 32;
}

static inline __attribute__((always_inline)) uint32_t nb_dhash(uint64_t key) {
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 55); /* 9 bits: NCCLBPF_DTAB_N = 512 */
}
_Static_assert(NCCLBPF_DTAB_N == 512, "nb_dhash gives 9 bits");

/* nb_decided counts the final outcome of call seq (cell: 0..20 or NCCLBPF_CELL_*; ch: the channel
 * count given to NCCL, 0 if none) and logs it when the decision log is on. */
static inline __attribute__((always_inline)) void nb_decided(struct nb_comm *c, uint64_t seq, int coll,
                                                             uint64_t n_bytes, uint32_t cell, int ch,
                                                             uint32_t differs) {
	uint64_t key = nb_dkey(coll, n_bytes, cell, ch, differs);
	uint32_t h = nb_dhash(key);
	struct nb_dent *e = &c->dtab[h];
	if (__builtin_expect(atomic_load_explicit(&e->key, memory_order_relaxed) == key, 1))
		nb_inc(&e->count);
	else
		nb_count_probe(c, key, h);
	if (__builtin_expect(atomic_load_explicit(&nb_dlog_rate, memory_order_relaxed) != 0, 0))
		nb_dlog(c, seq, coll, n_bytes, cell, ch, differs);
}

/* nb_count_default counts call seq as left to NCCL: one increment of a cell indexed by collective
 * and size bucket (collectives past NB_DFLT_COLLS go through the hashed table). */
static inline __attribute__((always_inline)) void nb_count_default(struct nb_comm *c, uint64_t seq, int coll,
                                                                   uint64_t n_bytes) {
	if (__builtin_expect((unsigned)coll < NB_DFLT_COLLS, 1)) {
		nb_inc(&c->dflt[coll][ncclbpf_size_bucket(n_bytes)]);
		if (__builtin_expect(atomic_load_explicit(&nb_dlog_rate, memory_order_relaxed) != 0, 0))
			nb_dlog(c, seq, coll, n_bytes, NCCLBPF_CELL_DEFAULT, 0, 0);
	} else {
		nb_decided(c, seq, coll, n_bytes, NCCLBPF_CELL_DEFAULT, 0, 0);
	}
}

/* nb_costlier says whether some available cell of the 7 x 3 table (cost >= 0) is cheaper than v. */
static inline __attribute__((always_inline)) uint32_t nb_costlier21(const float *t, float v) {
#if defined(__SSE2__)
	__m128 vv = _mm_set1_ps(v), zero = _mm_setzero_ps(), any = zero;
#pragma GCC unroll 5
	for (int i = 0; i < 20; i += 4) {
		__m128 x = _mm_loadu_ps(t + i);
		any = _mm_or_ps(any, _mm_and_ps(_mm_cmpge_ps(x, zero), _mm_cmplt_ps(x, vv)));
	}
	return (_mm_movemask_ps(any) | (t[20] >= 0.0f && t[20] < v)) != 0;
#else
	uint32_t r = 0;
	for (int i = 0; i < 21; i++)
		r |= t[i] >= 0.0f && t[i] < v;
	return r;
#endif
}

static inline uint32_t nb_costlier(const float *t, int n, float v) {
	if (n == 21)
		return nb_costlier21(t, v);
	uint32_t r = 0;
	for (int i = 0; i < n; i++)
		r |= t[i] >= 0.0f && t[i] < v;
	return r;
}

#endif /* NCCLBPF_METRICS_FOLD_H */

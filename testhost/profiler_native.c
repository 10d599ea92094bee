/* SPDX-License-Identifier: MIT */
/* profiler_native.c: see profiler_native.h. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../include/ncclbpf_profiler.h"
#include "profiler_native.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* ---- latency_stats: a direct-indexed table, what a native profiler would use ---- */
#include "../policies/latency_stats/latency_stats.h"

static struct ls_val ls_table[16][64];
static struct ls_val ls_spill; /* funcs beyond the table */

static inline struct ls_val *ls_lookup(const struct ls_key *k) {
	if (k->func >= 16 || k->bucket >= 64) return &ls_spill;
	struct ls_val *v = &ls_table[k->func][k->bucket];
	return v->count ? v : NULL;
}
static inline void ls_insert(const struct ls_key *k, const struct ls_val *v) {
	if (k->func < 16 && k->bucket < 64) ls_table[k->func][k->bucket] = *v;
}
#define LS_LOOKUP(k) ls_lookup(k)
#define LS_INSERT(k, v) ls_insert((k), (v))
#define LS_ATOMIC_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#include "../policies/latency_stats/latency_stats.h"

uint64_t latency_native_prog(void *ctx) {
	const struct ncclbpf_prof_ctx *c = ctx;
	uint64_t ns = ncclbpf_prof_latency_ns(c);
	ls_update((uint32_t)c->func, c->bytes, ns);
	return 0;
}

uint64_t latency_native_count(uint32_t func, uint32_t bucket) {
	return func < 16 && bucket < 64 ? ls_table[func][bucket].count : 0;
}

/* ---- adaptive: small open-addressing hash tables (insert-once keys, lock-free) ---- */
#undef ADAPTIVE_NCAND
#include "../policies/adaptive/adaptive.h"

#define HT_N 4096
struct ht_cands { _Atomic int used; struct adaptive_key k; struct adaptive_cands v; };
/* The rank-local measurements; the agreed copy the tuner reads; the copy taken at the last
 * agreement point, waiting for its activation call. */
static struct ht_cands ht_local[HT_N], ht_agreed[HT_N], ht_pending[HT_N];

static uint32_t hash64(const void *p, size_t n) {
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32));
}

/* used: 0 empty, 1 being written, 2 ready */
static struct adaptive_cands *ht_lookup(struct ht_cands *t, const struct adaptive_key *k) {
	for (uint32_t i = hash64(k, sizeof *k) % HT_N, n = 0; n < HT_N; n++, i = (i + 1) % HT_N) {
		int u = atomic_load(&t[i].used);
		if (u == 0) return NULL;
		if (u == 2 && !memcmp(&t[i].k, k, sizeof *k)) return &t[i].v;
	}
	return NULL;
}
static void ht_insert(struct ht_cands *t, const struct adaptive_key *k, const struct adaptive_cands *v) {
	for (uint32_t i = hash64(k, sizeof *k) % HT_N, n = 0; n < HT_N; n++, i = (i + 1) % HT_N) {
		int z = 0;
		if (atomic_compare_exchange_strong(&t[i].used, &z, 1)) {
			t[i].k = *k;
			t[i].v = *v;
			atomic_store(&t[i].used, 2);
			return;
		}
		while (atomic_load(&t[i].used) == 1) {
		}
		if (!memcmp(&t[i].k, k, sizeof *k)) return;
	}
}

#define ADAPTIVE_LOCAL_LOOKUP(k) ht_lookup(ht_local, (k))
#define ADAPTIVE_LOCAL_INSERT(k, v) ht_insert(ht_local, (k), (v))
#define ADAPTIVE_AGREED_LOOKUP(k) ((const struct adaptive_cands *)ht_lookup(ht_agreed, (k)))
#define ADAPTIVE_ATOMIC_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define ADAPTIVE_ROUNDS ADAPTIVE_ROUNDS_HOST
#define ADAPTIVE_PERIOD ((uint64_t)ADAPTIVE_PERIOD_HOST)
#define ADAPTIVE_WINDOW ((uint64_t)ADAPTIVE_WINDOW_HOST)
#define ADAPTIVE_MARGIN ADAPTIVE_MARGIN_HOST
#include "../policies/adaptive/adaptive.h"

/* One rank alone: the agreement of its own measurements is a copy (the minimum and the mean of one
 * value are that value). Taken while no measurement is being recorded (the host drains first). */
void adaptive_native_agree_take(void) { memcpy(ht_pending, ht_local, sizeof ht_pending); }
void adaptive_native_agree_apply(void) { memcpy(ht_agreed, ht_pending, sizeof ht_agreed); }

_Static_assert(ADAPTIVE_NCAND == ADAPTIVE_NCAND_HOST, "candidate count");

uint64_t adaptive_native_prof(void *ctx) {
	const struct ncclbpf_prof_ctx *c = ctx;
	if (c->flags & (NCCLBPF_PROF_F_FORCED | NCCLBPF_PROF_F_HOST_ONLY)) return 0;
	uint64_t ns = ncclbpf_prof_latency_ns(c);
	adaptive_record(c->comm_id, c->func, c->bytes, c->algorithm, c->protocol, c->n_channels, ns);
	return 0;
}

int adaptive_native_tune(uint64_t comm_id, uint32_t coll, uint64_t bytes, uint64_t call_seq, uint32_t avail_mask,
                         const float *cost) {
	uint32_t b[6];
	memcpy(b, cost, sizeof b); /* the TREE and RING rows: cells 0..5 */
	uint32_t explore = adaptive_plausible(b[0], b[1], b[2], b[3], b[4], b[5], avail_mask, ADAPTIVE_PRUNE_HOST);
	return adaptive_decide(comm_id, coll, bytes, call_seq, avail_mask, explore, b);
}

/* SPDX-License-Identifier: MIT */
/*
 * decisions_fold.h: the hot-path half of the decision record (decisions.h), included by tuner.c.
 *
 * Cost per getCollInfo: four independent multiplications, one dependent multiply-xorshift on the
 * digest, and six plain stores to a ring entry the owner thread alone writes. No lock, no
 * read-modify-write, no fence beyond compiler barriers on x86 (the release fence between the
 * invalidating store and the field stores is a store-store ordering x86 gives for free).
 */
#ifndef NCCLBPF_DECISIONS_FOLD_H
#define NCCLBPF_DECISIONS_FOLD_H

#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

#define NB_DK0 0x9e3779b97f4a7c15ull
#define NB_DK1 0xc2b2ae3d27d4eb4full
#define NB_DK2 0x165667b19e3779f9ull
#define NB_DK3 0xd6e8feb86659fd93ull
#define NB_DK4 0xff51afd7ed558ccdull
#define NB_DK5 0x27d4eb2f165667c5ull

#define NB_RLX memory_order_relaxed

static inline uint64_t nb_digest_step(uint64_t d, uint64_t x) {
	d = ((d << 27) | (d >> 37)) ^ x;
	d *= NB_DK4;
	return d ^ (d >> 31);
}

/* nb_record_decision folds the decision of call seq into c's digest and ring. a, p, ch are what
 * the program decided (-1, -1, 0 when it returned DEFAULT). */
static inline __attribute__((always_inline)) void nb_record_decision(struct nb_comm *c, uint64_t seq, int coll,
                                                                       uint64_t n_bytes, int a, int p, int ch) {
	uint64_t w1 = (uint32_t)a | (uint64_t)(uint32_t)p << 32;
	uint64_t w2 = (uint32_t)ch | (uint64_t)(uint32_t)coll << 32;
	uint64_t x = seq * NB_DK0 ^ n_bytes * NB_DK1 ^ w1 * NB_DK2 ^ w2 * NB_DK3;
	uint64_t d = nb_digest_step(atomic_load_explicit(&c->digest, NB_RLX), x);
	atomic_store_explicit(&c->digest, d, NB_RLX);
	struct nb_drec *r = &c->ring[seq & (NB_DREC_N - 1)];
	atomic_store_explicit(&r->tag, 0, NB_RLX);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&r->n_bytes, n_bytes, NB_RLX);
	atomic_store_explicit(&r->chunk, 0, NB_RLX);
	atomic_store_explicit(&r->digest, d, NB_RLX);
	atomic_store_explicit(&r->coll, coll, NB_RLX);
	atomic_store_explicit(&r->algo, a, NB_RLX);
	atomic_store_explicit(&r->proto, p, NB_RLX);
	atomic_store_explicit(&r->channels, ch, NB_RLX);
	atomic_store_explicit(&r->tag, seq + 1, memory_order_release);
}

/* nb_record_chunk folds the chunk size decided at getChunkSize with call_seq (one past the
 * collective's own seq) into the digest and into that collective's record. */
static inline void nb_record_chunk(struct nb_comm *c, uint64_t call_seq, uint64_t chunk) {
	uint64_t s = call_seq - 1;
	uint64_t d = nb_digest_step(atomic_load_explicit(&c->digest, NB_RLX), chunk * NB_DK5 ^ s * NB_DK0);
	atomic_store_explicit(&c->digest, d, NB_RLX);
	if (call_seq == 0)
		return;
	struct nb_drec *r = &c->ring[s & (NB_DREC_N - 1)];
	if (atomic_load_explicit(&r->tag, NB_RLX) != s + 1)
		return;
	atomic_store_explicit(&r->tag, 0, NB_RLX);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&r->chunk, chunk, NB_RLX);
	atomic_store_explicit(&r->digest, d, NB_RLX);
	atomic_store_explicit(&r->tag, s + 1, memory_order_release);
}

#endif /* NCCLBPF_DECISIONS_FOLD_H */

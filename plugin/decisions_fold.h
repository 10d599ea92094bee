/* SPDX-License-Identifier: MIT */
/*
 * decisions_fold.h: the hot-path half of the decision record (decisions.h), included by tuner.c.
 *
 * The digest is the sum (mod 2^64) of one 64-bit hash per decision a program made (a call left to
 * NCCL adds nothing: NCCL's own choice is the same on every rank), the hash covering the call's
 * seq and the whole decision. Because every term has its seq, the sum still says whether two
 * communicators took the same decisions on the same calls, and the only dependence from one call
 * to the next is one load-add-store (as for the call counter), so the hashing overlaps with the
 * rest of the call. A chunk size adds its own term. Cost per getCollInfo: four independent
 * multiplications and two plain stores to one 16-byte record the owner thread alone writes.
 * No lock, no read-modify-write, no fence: readers validate what they copied against the
 * communicator's seq (decisions.c), which the owner stores with release order after the record of
 * the previous call.
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

/* nb_record_decision adds the decision of call seq to c's digest and ring. a, p, ch are what the
 * program decided (-1, -1, 0 when it returned DEFAULT). */
static inline __attribute__((always_inline)) void nb_record_decision(struct nb_comm *c, uint64_t seq, int coll,
                                                                       uint64_t n_bytes, int a, int p, int ch) {
	uint64_t w1 = (uint32_t)a | (uint64_t)(uint32_t)p << 32;
	uint64_t w2 = (uint32_t)ch | (uint64_t)(uint32_t)coll << 32;
	uint64_t x = seq * NB_DK0 ^ n_bytes * NB_DK1 ^ w1 * NB_DK2 ^ w2 * NB_DK3;
	uint64_t d = atomic_load_explicit(&c->digest, NB_RLX) + x;
	atomic_store_explicit(&c->digest, d, NB_RLX);
	struct nb_drec *r = &c->ring[seq & (NB_DREC_N - 1)];
	uint64_t chs = (uint32_t)ch > 255 ? 255 : (uint32_t)ch;
	atomic_store_explicit(&r->what,
	                      (uint64_t)(uint32_t)(seq + 1) | (uint64_t)(uint8_t)coll << 32 | (uint64_t)(uint8_t)a << 40 |
	                          (uint64_t)(uint8_t)p << 48 | chs << 56,
	                      NB_RLX);
	atomic_store_explicit(&r->digest, d, NB_RLX);
}

/* nb_record_chunk adds the chunk size decided at getChunkSize with call_seq (one past the
 * collective's own seq) to the digest and to that collective's record; a collective left to NCCL
 * (not recorded by getCollInfo) is recorded here as such, so that its chunk size has a record. */
static inline void nb_record_chunk(struct nb_comm *c, uint64_t call_seq, uint64_t chunk, int coll) {
	uint64_t s = call_seq - 1;
	uint64_t d = atomic_load_explicit(&c->digest, NB_RLX) + (chunk * NB_DK5 ^ s * NB_DK4 ^ NB_DK2);
	atomic_store_explicit(&c->digest, d, NB_RLX);
	if (call_seq == 0)
		return;
	struct nb_drec *dr = &c->ring[s & (NB_DREC_N - 1)];
	if ((uint32_t)atomic_load_explicit(&dr->what, NB_RLX) != (uint32_t)(s + 1)) {
		atomic_store_explicit(&dr->what, (uint64_t)(uint32_t)(s + 1) | (uint64_t)(uint8_t)coll << 32 | 0xffull << 40 | 0xffull << 48,
		                      NB_RLX);
		atomic_store_explicit(&dr->digest, d, NB_RLX);
	}
	struct nb_crec *r = &c->ring_chunk[s & (NB_DREC_N - 1)];
	atomic_store_explicit(&r->seq1, call_seq, NB_RLX);
	atomic_store_explicit(&r->chunk, chunk, NB_RLX);
	atomic_store_explicit(&r->digest, d, NB_RLX);
}

#endif /* NCCLBPF_DECISIONS_FOLD_H */

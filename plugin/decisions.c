/* SPDX-License-Identifier: MIT */
/* decisions.c: the control plane's copy of the communicators' decision records (decisions.h). */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "decisions.h"

/* A plain copy of one slot of the ring and of its chunk record. */
struct nb_copy {
	uint64_t what, digest, cseq1, chunk, cdigest;
};

struct nb_snap {
	struct ncclbpf_comm_decisions *out;
	int max, n, live;
};

static void nb_snap_one(struct nb_comm *c, void *arg) {
	struct nb_snap *s = arg;
	s->live++;
	if (s->n >= s->max)
		return;
	struct ncclbpf_comm_decisions *o = &s->out[s->n++];
	o->comm_id = c->comm_id;
	o->n_ranks = c->n_ranks;
	o->n_nodes = c->n_nodes;
	o->n = 0;
	o->pad = 0;
	/*
	 * Call q's record is written during call q, after seq became q + 1; its chunk sizes before call
	 * q + 1 makes seq q + 2 (a release store). Its slot is rewritten by call q + 256, after seq
	 * became q + 257. So with s1 read (acquire) before the copy and s2 after it, the records of
	 * q <= s1 - 2 were complete before the copy, and those of q >= s2 - 256 were not overwritten
	 * during it.
	 */
	uint64_t s1 = atomic_load_explicit(&c->seq, memory_order_acquire);
	static struct nb_copy dr[NB_DREC_N]; /* under the registry lock: one reader at a time */
	for (int i = 0; i < NB_DREC_N; i++) {
		dr[i].what = atomic_load_explicit(&c->ring[i].what, memory_order_relaxed);
		dr[i].digest = atomic_load_explicit(&c->ring[i].digest, memory_order_relaxed);
		dr[i].cseq1 = atomic_load_explicit(&c->ring_chunk[i].seq1, memory_order_relaxed);
		dr[i].chunk = atomic_load_explicit(&c->ring_chunk[i].chunk, memory_order_relaxed);
		dr[i].cdigest = atomic_load_explicit(&c->ring_chunk[i].digest, memory_order_relaxed);
	}
	atomic_thread_fence(memory_order_acquire);
	uint64_t s2 = atomic_load_explicit(&c->seq, memory_order_relaxed);
	o->seq = s1;
	o->digest = atomic_load_explicit(&c->digest, memory_order_relaxed);
	uint64_t lo = s2 > NB_DREC_N ? s2 - NB_DREC_N : 0, hi = s1 - 2;
	o->kept_from = lo;
	if (s1 < 2)
		return;
	for (uint64_t q = lo; q <= hi; q++) {
		const struct nb_copy *r = &dr[q & (NB_DREC_N - 1)];
		uint64_t w = r->what;
		if ((uint32_t)w != (uint32_t)(q + 1))
			continue; /* no program ran for call q */
		struct ncclbpf_decision d;
		d.seq = q;
		d.coll = (uint8_t)(w >> 32);
		d.algorithm = (int8_t)(uint8_t)(w >> 40);
		d.protocol = (int8_t)(uint8_t)(w >> 48);
		d.channels = (uint8_t)(w >> 56);
		d.chunk = r->cseq1 == q + 1 ? r->chunk : 0;
		d.digest = r->cseq1 == q + 1 ? r->cdigest : r->digest;
		o->ring[o->n++] = d;
	}
}

int ncclbpf_decisions_snapshot(struct ncclbpf_comm_decisions *out, int max, int *live) {
	struct nb_snap s = {out, max < 0 ? 0 : max, 0, 0};
	nb_registry_each(nb_snap_one, &s);
	if (live)
		*live = s.live;
	return s.n;
}

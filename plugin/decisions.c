/* SPDX-License-Identifier: MIT */
/* decisions.c: the control plane's copy of the communicators' decision records (decisions.h). */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "decisions.h"

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
	o->seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
	o->digest = atomic_load_explicit(&c->digest, memory_order_relaxed);
	o->n = 0;
	o->pad = 0;
	/* Oldest first: start one past the newest possible slot. */
	uint64_t end = o->seq + 1;
	uint64_t start = end > NB_DREC_N ? end - NB_DREC_N : 0;
	for (uint64_t q = start; q < end; q++) {
		struct nb_drec *r = &c->ring[q & (NB_DREC_N - 1)];
		uint64_t t1 = atomic_load_explicit(&r->tag, memory_order_acquire);
		if (t1 != q + 1)
			continue;
		struct ncclbpf_decision d;
		d.seq = q;
		d.n_bytes = atomic_load_explicit(&r->n_bytes, memory_order_relaxed);
		d.chunk = atomic_load_explicit(&r->chunk, memory_order_relaxed);
		d.digest = atomic_load_explicit(&r->digest, memory_order_relaxed);
		d.coll = atomic_load_explicit(&r->coll, memory_order_relaxed);
		d.algorithm = atomic_load_explicit(&r->algo, memory_order_relaxed);
		d.protocol = atomic_load_explicit(&r->proto, memory_order_relaxed);
		d.channels = atomic_load_explicit(&r->channels, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&r->tag, memory_order_relaxed) != t1)
			continue;
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

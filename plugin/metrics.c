/* SPDX-License-Identifier: MIT */
/* metrics.c: the cold half of the decision counts and the decision log (metrics.h, metrics_fold.h). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ncclbpf.h"
#include "internal.h"
#include "metrics_fold.h"
#include "clock.h"

_Atomic uint32_t nb_dlog_rate;
static _Atomic uint64_t nb_dlog_window, nb_dlog_used, nb_dlog_dropped;

#define NB_DLOG_DEFAULT_RATE 1000
#define NB_DLOG_MAX_RATE 1000000

/* nb_dlog_configure reads NCCLBPF_DECISION_LOG: unset, "", "0", "off", "no", "false": off; "1", "on",
 * "yes", "true": NB_DLOG_DEFAULT_RATE lines per second; a number N: N lines per second (at most
 * NB_DLOG_MAX_RATE). Anything else is off, with a warning on stderr (no logger yet). */
void nb_dlog_configure(const char *v) {
	uint32_t rate = 0;
	if (v == NULL || !*v || !strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") ||
	    !strcasecmp(v, "false"))
		rate = 0;
	else if (!strcasecmp(v, "on") || !strcasecmp(v, "yes") || !strcasecmp(v, "true"))
		rate = NB_DLOG_DEFAULT_RATE;
	else {
		char *end = NULL;
		unsigned long n = strtoul(v, &end, 10);
		if (end && *end == 0 && n > 0)
			rate = n > NB_DLOG_MAX_RATE ? NB_DLOG_MAX_RATE : (uint32_t)n;
		else
			fprintf(stderr, "ncclbpf: NCCLBPF_DECISION_LOG=%s: expected on, off or lines per second; the decision log is off\n", v);
	}
	atomic_store(&nb_dlog_rate, rate);
}

static const char *nb_coll_name(int c) {
	static const char *n[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
	                          "Send", "Recv", "AlltoAll", "Scatter", "Gather", "AllGatherV"};
	return c >= 0 && c < (int)(sizeof n / sizeof n[0]) ? n[c] : "collective";
}

static const char *nb_algo_names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char *nb_proto_names[] = {"LL", "LL128", "SIMPLE"};

/* nb_dlog writes one INFO line (NCCL_TUNING) for a decision, at most nb_dlog_rate a second over the
 * process; lines over the rate are counted and reported once the next second starts. */
void nb_dlog(struct nb_comm *c, uint64_t seq, int coll, uint64_t n_bytes, uint32_t cell, int ch, uint32_t differs) {
	if (c->log == NULL)
		return;
	uint32_t rate = atomic_load_explicit(&nb_dlog_rate, memory_order_relaxed);
	uint64_t now = nb_coarse_ns() / 1000000000ull + 1, w = atomic_load(&nb_dlog_window);
	if (now != w && atomic_compare_exchange_strong(&nb_dlog_window, &w, now)) {
		atomic_store(&nb_dlog_used, 0);
		uint64_t dropped = atomic_exchange(&nb_dlog_dropped, 0);
		if (dropped)
			c->log(NB_LOG_INFO, NB_SUBSYS_TUNING, __FILE__, __LINE__,
			       "ncclbpf: %llu decision lines not logged (NCCLBPF_DECISION_LOG: at most %u a second)",
			       (unsigned long long)dropped, rate);
	}
	if (atomic_fetch_add(&nb_dlog_used, 1) >= rate) {
		atomic_fetch_add(&nb_dlog_dropped, 1);
		return;
	}
	char what[96];
	if (cell < 21)
		snprintf(what, sizeof what, "algorithm %s protocol %s channels %d%s", nb_algo_names[cell / 3],
		         nb_proto_names[cell % 3], ch, differs ? " (not NCCL's cheapest)" : "");
	else if (cell == NCCLBPF_CELL_PARTIAL)
		snprintf(what, sizeof what, "algorithm or protocol only, channels %d", ch);
	else if (cell == NCCLBPF_CELL_CHANNELS)
		snprintf(what, sizeof what, "channels %d", ch);
	else if (cell == NCCLBPF_CELL_REFUSED)
		snprintf(what, sizeof what, "refused (NCCL's default kept)");
	else
		snprintf(what, sizeof what, "left to NCCL");
	c->log(NB_LOG_INFO, NB_SUBSYS_TUNING, __FILE__, __LINE__, "ncclbpf: %s: comm %#llx call %llu %s %llu bytes: %s",
	       cell < 21 || cell == NCCLBPF_CELL_PARTIAL || cell == NCCLBPF_CELL_CHANNELS ? "applied config" : "decision",
	       (unsigned long long)c->comm_id, (unsigned long long)seq, nb_coll_name(coll), (unsigned long long)n_bytes, what);
}

/* nb_count_probe counts a decision whose key is not in its first entry: probes on, takes the first
 * free entry (count first, then the key with release order), or counts an overflow. */
void nb_count_probe(struct nb_comm *c, uint64_t key, uint32_t h) {
	for (uint32_t i = 0; i < NB_DTAB_PROBES; i++) {
		struct nb_dent *e = &c->dtab[(h + i) & (NCCLBPF_DTAB_N - 1)];
		uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
		if (k == key) {
			nb_inc(&e->count);
			return;
		}
		if (k == 0) {
			atomic_store_explicit(&e->count, 1, memory_order_relaxed);
			atomic_store_explicit(&e->key, key, memory_order_release);
			return;
		}
	}
	nb_inc(&c->dtab_overflow);
}

struct nb_msnap {
	struct ncclbpf_comm_counters *comms;
	struct ncclbpf_decision_count *rows;
	int max_comms, max_rows, n, nrows, live;
};

#define L(f) atomic_load_explicit(&c->f, memory_order_relaxed)

static void nb_msnap_one(struct nb_comm *c, void *arg) {
	struct nb_msnap *s = arg;
	s->live++;
	if (s->n >= s->max_comms)
		return;
	struct ncclbpf_comm_counters *o = &s->comms[s->n++];
	memset(o, 0, sizeof *o);
	o->comm_id = c->comm_id;
	o->n_ranks = c->n_ranks;
	o->n_nodes = c->n_nodes;
	o->calls = L(seq);
	o->policy_calls = nb_policy_calls(c);
	o->applied = L(applied);
	o->rejected = L(rejected);
	o->clamped = L(clamped);
	o->chunk_calls = L(chunk_calls);
	o->chunk_applied = L(chunk_applied);
	o->chunk_rejected = L(chunk_rejected);
	o->overflow = L(dtab_overflow);
	o->first = (uint32_t)s->nrows;
	int start = s->nrows;
	for (int i = 0; i < NCCLBPF_DTAB_N; i++) {
		uint64_t k = atomic_load_explicit(&c->dtab[i].key, memory_order_acquire);
		if (k == 0)
			continue;
		if (s->nrows >= s->max_rows) {
			s->nrows = start; /* does not fit: none of its rows */
			o->n = 0;
			return;
		}
		struct ncclbpf_decision_count *r = &s->rows[s->nrows++];
		memset(r, 0, sizeof *r);
		r->count = atomic_load_explicit(&c->dtab[i].count, memory_order_relaxed);
		r->coll = (uint8_t)k;
		r->size_bucket = (uint8_t)(k >> 8);
		r->cell = (uint8_t)(k >> 16);
		r->channels = (uint8_t)(k >> 24);
		r->differs = (uint8_t)(k >> 32) & 1;
	}
	for (int k = 0; k < NB_DFLT_COLLS; k++)
		for (int b = 0; b < NCCLBPF_SIZE_BUCKETS; b++) {
			uint64_t n = atomic_load_explicit(&c->dflt[k][b], memory_order_relaxed);
			if (n == 0)
				continue;
			if (s->nrows >= s->max_rows) {
				s->nrows = start;
				o->n = 0;
				return;
			}
			struct ncclbpf_decision_count *r = &s->rows[s->nrows++];
			memset(r, 0, sizeof *r);
			r->count = n;
			r->coll = (uint8_t)k;
			r->size_bucket = (uint8_t)b;
			r->cell = NCCLBPF_CELL_DEFAULT;
		}
	o->n = (uint32_t)(s->nrows - start);
}
#undef L

int ncclbpf_metrics_decisions(struct ncclbpf_comm_counters *comms, int max_comms, struct ncclbpf_decision_count *rows,
                              int max_rows, int *live) {
	struct nb_msnap s = {comms, rows, max_comms < 0 ? 0 : max_comms, max_rows < 0 ? 0 : max_rows, 0, 0, 0};
	nb_registry_each(nb_msnap_one, &s);
	if (live)
		*live = s.live;
	return s.n;
}

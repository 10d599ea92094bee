/* SPDX-License-Identifier: MIT */
/*
 * slot.c: hook slots, the communicator registry and grace periods.
 *
 * Publishing and retiring code follows the grace-period protocol of grace.h: the readers are the
 * registered communicators (their active word, bracketed by nb_enter/nb_leave in internal.h). Only
 * communicators registered by init are callers: every entry into published code goes through one,
 * and a communicator is unregistered by finalize, after its last call.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "comms.h"
#include "internal.h"
#include "loader.h"
#include "reload.h"
#include "grace.h"

struct nb_slot nb_slots[NCCLBPF_NUM_SLOTS];

static pthread_mutex_t nb_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nb_comm *nb_registry;
/* Counters of finalized communicators, and communicators ever created; under the lock. */
static struct ncclbpf_tuner_stats nb_retired;
static uint64_t nb_comms_total;

uintptr_t ncclbpf_slot_word(const struct nb_published *r) {
	if (r == NULL || (r->entry & NCCLBPF_SLOT_FLAGS) != 0)
		return 0;
	return r->entry ? r->entry | ((uintptr_t)r->hints & NCCLBPF_SLOT_FLAGS) : 0;
}

uintptr_t ncclbpf_slot_publish(int slot, uintptr_t fn) {
	if (slot < 0 || slot >= NCCLBPF_NUM_SLOTS)
		return 0;
	if (fn)
		nb_grace_before_publish();
	return atomic_exchange_explicit(&nb_slots[slot].fn, fn, memory_order_acq_rel);
}

/* The registry as readers of grace.h: each communicator's active word (under the registry lock). */
static _Atomic uint64_t *nb_registry_next(void *it) {
	struct nb_comm **c = it;
	if (*c == NULL)
		return NULL;
	_Atomic uint64_t *w = &(*c)->active;
	*c = (*c)->next;
	return w;
}

int ncclbpf_slot_synchronize(void) {
	if (nb_grace_fence() != 0)
		return -1;
	pthread_mutex_lock(&nb_registry_lock);
	struct nb_comm *it = nb_registry;
	nb_grace_wait_all(nb_registry_next, &it);
	pthread_mutex_unlock(&nb_registry_lock);
	return 0;
}

void nb_register(struct nb_comm *c) {
	pthread_mutex_lock(&nb_registry_lock);
	c->prev = NULL;
	c->next = nb_registry;
	if (nb_registry)
		nb_registry->prev = c;
	nb_registry = c;
	nb_comms_total++;
	pthread_mutex_unlock(&nb_registry_lock);
}

static void nb_add(struct ncclbpf_tuner_stats *s, struct nb_comm *c) {
#define L(f) atomic_load_explicit(&c->f, memory_order_relaxed)
	s->calls += L(seq);
	s->policy_calls += nb_policy_calls(c);
	s->applied += L(applied);
	s->rejected += L(rejected);
	s->clamped += L(clamped);
	s->chunk_calls += L(chunk_calls);
	s->chunk_applied += L(chunk_applied);
	s->chunk_rejected += L(chunk_rejected);
#undef L
}

void nb_unregister(struct nb_comm *c) {
	pthread_mutex_lock(&nb_registry_lock);
	if (c->prev)
		c->prev->next = c->next;
	else if (nb_registry == c)
		nb_registry = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	nb_add(&nb_retired, c);
	pthread_mutex_unlock(&nb_registry_lock);
}

void ncclbpf_tuner_get_stats(struct ncclbpf_tuner_stats *out) {
	struct ncclbpf_tuner_stats s = {0};
	pthread_mutex_lock(&nb_registry_lock);
	s = nb_retired;
	s.comms_live = 0;
	for (struct nb_comm *c = nb_registry; c; c = c->next) {
		nb_add(&s, c);
		s.comms_live++;
	}
	s.comms_total = nb_comms_total;
	s.load_status = nb_load_status();
	pthread_mutex_unlock(&nb_registry_lock);
	*out = s;
}

void nb_registry_each(void (*fn)(struct nb_comm *c, void *arg), void *arg) {
	pthread_mutex_lock(&nb_registry_lock);
	for (struct nb_comm *c = nb_registry; c; c = c->next)
		fn(c, arg);
	pthread_mutex_unlock(&nb_registry_lock);
}

/* Declared in reload.h: the progress of the live communicators, for synchronized activation. */
int ncclbpf_comms_seq_range(uint64_t *min, uint64_t *max) {
	uint64_t lo = UINT64_MAX, hi = 0;
	int n = 0;
	pthread_mutex_lock(&nb_registry_lock);
	for (struct nb_comm *c = nb_registry; c; c = c->next, n++) {
		uint64_t s = atomic_load_explicit(&c->seq, memory_order_relaxed);
		if (s < lo)
			lo = s;
		if (s > hi)
			hi = s;
	}
	pthread_mutex_unlock(&nb_registry_lock);
	*min = lo;
	*max = hi;
	return n;
}

/* Declared in comms.h. */
int ncclbpf_comms_list(struct ncclbpf_comm_info *out, int max) {
	int n = 0;
	pthread_mutex_lock(&nb_registry_lock);
	for (struct nb_comm *c = nb_registry; c; c = c->next, n++) {
		if (n < max) {
			out[n].comm_id = c->comm_id;
			out[n].seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
			out[n].n_ranks = c->n_ranks;
			out[n].n_nodes = c->n_nodes;
		}
	}
	pthread_mutex_unlock(&nb_registry_lock);
	return n;
}

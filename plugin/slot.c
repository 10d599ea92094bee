/* SPDX-License-Identifier: MIT */
/*
 * slot.c: hook slots, the communicator registry and grace periods.
 *
 * Publishing and retiring code (the protocol hot reload relies on):
 *
 *   caller (NCCL's thread, per call)          publisher (Go, off the hot path)
 *   ---------------------------------         ------------------------------------------
 *   c->active = a+1      (odd: inside)        old = exchange(slot->fn, new)
 *   compiler barrier                          membarrier(PRIVATE_EXPEDITED)
 *   fn = load_acquire(slot->fn)               for each registered communicator c:
 *   fn(ctx)                                       s = c->active
 *   c->active = a+2      (release; even)          if s is odd: wait until c->active != s
 *                                             => nobody still runs `old`: it may be freed
 *
 * The caller pays two plain stores and one load: no lock, no read-modify-write, no fence. The
 * membarrier() makes every running thread execute a full barrier, so after it either the caller's
 * "odd" store is visible to the publisher or the caller's load of slot->fn comes after the exchange
 * and sees the new code. This is the asymmetric-fence scheme of user-space RCU (membarrier flavour).
 * Only communicators registered by init are callers: every entry into published code goes through
 * one, and a communicator is unregistered by finalize, after its last call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "comms.h"
#include "internal.h"
#include "reload.h"
#include "sync_core.h"

struct nb_slot nb_slots[NCCLBPF_NUM_SLOTS];

static pthread_mutex_t nb_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nb_comm *nb_registry;
/* Counters of finalized communicators, and communicators ever created; under the lock. */
static struct ncclbpf_tuner_stats nb_retired;
static uint64_t nb_comms_total;

static int nb_membarrier(int cmd) { return (int)syscall(__NR_membarrier, cmd, 0, 0); }

static int nb_membarrier_state; /* 0 unknown, 1 private expedited registered, -1 unavailable */

/* Registered at the first grace period (a reload, off NCCL's threads), not at load time: in a
 * process that already has threads, registering waits for an RCU grace period of the kernel, which
 * dlopen need not pay. */
static pthread_once_t nb_membarrier_once = PTHREAD_ONCE_INIT;
static void nb_membarrier_register(void) {
	if (nb_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		nb_membarrier_state = 1;
	else
		nb_membarrier_state = -1;
}

uintptr_t ncclbpf_slot_publish(int slot, uintptr_t fn) {
	if (slot < 0 || slot >= NCCLBPF_NUM_SLOTS)
		return 0;
	if (fn)
		nb_sync_core_before_publish();
	return atomic_exchange_explicit(&nb_slots[slot].fn, fn, memory_order_acq_rel);
}

int ncclbpf_slot_synchronize(void) {
	pthread_once(&nb_membarrier_once, nb_membarrier_register);
	if (nb_membarrier_state != 1 || nb_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		return -1;
	pthread_mutex_lock(&nb_registry_lock);
	for (struct nb_comm *c = nb_registry; c; c = c->next) {
		uint64_t s = atomic_load_explicit(&c->active, memory_order_acquire);
		if ((s & 1) == 0)
			continue;
		for (int spins = 0; atomic_load_explicit(&c->active, memory_order_acquire) == s; spins++) {
			if (spins < 1000) {
				sched_yield();
			} else {
				struct timespec ts = {0, 50000};
				nanosleep(&ts, NULL);
			}
		}
	}
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

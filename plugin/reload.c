/* SPDX-License-Identifier: MIT */
/*
 * reload.c: switch trampolines for synchronized activation (see reload.h).
 *
 * A trampoline has the program ABI (`uint64_t fn(void *ctx)`), so the shim calls it like any
 * compiled program, between nb_enter and nb_leave: the grace periods of slot.c cover it, and the
 * old and new programs it jumps to, without any change to the hot path. Its record is written
 * before the trampoline is published (the slot exchange is a release, the shim's slot load an
 * acquire) and not changed while the trampoline can run.
 *
 * Tuner calls see call_seq = getCollInfo calls before this one. getChunkSize comes after the
 * getCollInfo of its collective, when the count has already moved on by one, so the chunk
 * trampoline switches at N + 1: the chunk size of collective N comes from the same bundle as its
 * algorithm.
 *
 * An activation manifest may give some communicators their own N (by comm_id): the trampoline
 * looks its communicator up in a table of at most NCCLBPF_RELOAD_MAX_COMMS entries (only while
 * armed; the slot gets the new entry itself once every communicator has passed its N).
 */
#include <stdatomic.h>

#include "ncclbpf.h"
#include "internal.h"
#include "reload.h"

struct nb_switch {
	_Atomic(uintptr_t) old_word, new_word;
	_Atomic uint64_t at;
	_Atomic int armed;
	/* Communicators with their own activation call (an activation manifest), n_comm of them. */
	_Atomic uint32_t n_comm;
	uint64_t comm_id[NCCLBPF_RELOAD_MAX_COMMS], comm_at[NCCLBPF_RELOAD_MAX_COMMS];
};

static struct nb_switch nb_switches[NCCLBPF_NUM_SLOTS];

static inline uint64_t nb_switch_at(struct nb_switch *s, uint64_t comm_id) {
	uint32_t n = atomic_load_explicit(&s->n_comm, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++)
		if (s->comm_id[i] == comm_id)
			return s->comm_at[i];
	return atomic_load_explicit(&s->at, memory_order_relaxed);
}

/* The two-phase gate (reload.h): one for every switch, since a process switches as a whole. */
static _Atomic int nb_gate;
static _Atomic uint64_t nb_lapse_comm, nb_lapse_seq;

/* nb_gate_new decides a call at or past the activation call: 1 new program, 0 old. */
static inline int nb_gate_new(uint64_t comm_id, uint64_t seq) {
	int g = atomic_load_explicit(&nb_gate, memory_order_acquire);
	for (;;) {
		switch (g) {
		case NCCLBPF_GATE_OPEN:
		case NCCLBPF_GATE_SWITCHED:
			return 1;
		case NCCLBPF_GATE_COMMITTED:
			if (atomic_compare_exchange_weak_explicit(&nb_gate, &g, NCCLBPF_GATE_SWITCHED, memory_order_acq_rel,
			                                          memory_order_acquire))
				return 1;
			continue;
		case NCCLBPF_GATE_PREPARED:
			if (atomic_compare_exchange_weak_explicit(&nb_gate, &g, NCCLBPF_GATE_LAPSED, memory_order_acq_rel,
			                                          memory_order_acquire)) {
				atomic_store_explicit(&nb_lapse_comm, comm_id, memory_order_relaxed);
				atomic_store_explicit(&nb_lapse_seq, seq, memory_order_relaxed);
				return 0;
			}
			continue;
		default:
			return 0;
		}
	}
}

void ncclbpf_gate_set(int state) { atomic_store(&nb_gate, state); }

int ncclbpf_gate_get(void) { return atomic_load(&nb_gate); }

int ncclbpf_gate_cas(int from, int to) {
	int g = from;
	atomic_compare_exchange_strong(&nb_gate, &g, to);
	return g;
}

void ncclbpf_gate_lapse(uint64_t *comm_id, uint64_t *seq) {
	*comm_id = atomic_load(&nb_lapse_comm);
	*seq = atomic_load(&nb_lapse_seq);
}

static inline uint64_t nb_switch_call(struct nb_switch *s, uint64_t comm_id, uint64_t seq, void *ctx) {
	uintptr_t w = seq >= nb_switch_at(s, comm_id) && nb_gate_new(comm_id, seq)
	                  ? atomic_load_explicit(&s->new_word, memory_order_relaxed)
	                  : atomic_load_explicit(&s->old_word, memory_order_relaxed);
	ncclbpf_prog_fn fn = (ncclbpf_prog_fn)(w & ~NCCLBPF_SLOT_FLAGS);
	if (fn == 0)
		return NCCLBPF_TUNER_DEFAULT; /* that bundle has no program for the hook */
	return fn(ctx);
}

__attribute__((aligned(16))) static uint64_t nb_switch_tuner(void *ctx) {
	const struct ncclbpf_tuner_ctx *x = ctx;
	return nb_switch_call(&nb_switches[NCCLBPF_SLOT_TUNER], x->comm_id, x->call_seq, ctx);
}

__attribute__((aligned(16))) static uint64_t nb_switch_chunk(void *ctx) {
	const struct ncclbpf_chunk_ctx *x = ctx;
	return nb_switch_call(&nb_switches[NCCLBPF_SLOT_CHUNK_SIZE], x->comm_id, x->call_seq, ctx);
}

int ncclbpf_reload_arm(int slot, uintptr_t new_word, uint64_t at) {
	return ncclbpf_reload_arm_comms(slot, new_word, at, NULL, NULL, 0);
}

int ncclbpf_reload_arm_comms(int slot, uintptr_t new_word, uint64_t at, const uint64_t *ids, const uint64_t *ats,
                             int n) {
	if (slot < 0 || slot >= NCCLBPF_NUM_SLOTS || n < 0 || n > NCCLBPF_RELOAD_MAX_COMMS)
		return -1;
	struct nb_switch *s = &nb_switches[slot];
	if (atomic_load(&s->armed))
		return -1;
	uintptr_t cur = atomic_load_explicit(&nb_slots[slot].fn, memory_order_acquire);
	if (cur == 0 && new_word == 0)
		return 0; /* nothing runs before or after: nothing to switch */
	uintptr_t flags;
	if (cur == 0)
		flags = new_word & NCCLBPF_SLOT_FLAGS;
	else if (new_word == 0)
		flags = cur & NCCLBPF_SLOT_FLAGS;
	else
		flags = cur & new_word & NCCLBPF_SLOT_FLAGS; /* a hint only where it holds for both */
	atomic_store_explicit(&s->old_word, cur, memory_order_relaxed);
	atomic_store_explicit(&s->new_word, new_word, memory_order_relaxed);
	int chunk = slot == NCCLBPF_SLOT_CHUNK_SIZE;
	atomic_store_explicit(&s->at, chunk && at != UINT64_MAX ? at + 1 : at, memory_order_relaxed);
	for (int i = 0; i < n; i++) {
		s->comm_id[i] = ids[i];
		s->comm_at[i] = chunk && ats[i] != UINT64_MAX ? ats[i] + 1 : ats[i];
	}
	atomic_store_explicit(&s->n_comm, (uint32_t)n, memory_order_relaxed);
	atomic_store(&s->armed, 1);
	uintptr_t tramp = slot == NCCLBPF_SLOT_TUNER ? (uintptr_t)nb_switch_tuner : (uintptr_t)nb_switch_chunk;
	ncclbpf_slot_publish(slot, tramp | flags);
	return 0;
}

int ncclbpf_reload_finish(int slot) {
	if (slot < 0 || slot >= NCCLBPF_NUM_SLOTS)
		return -1;
	struct nb_switch *s = &nb_switches[slot];
	if (!atomic_load(&s->armed))
		return -1;
	ncclbpf_slot_publish(slot, atomic_load_explicit(&s->new_word, memory_order_relaxed));
	/* The record stays as it is: a thread may still be inside the trampoline until the next
	 * grace period, and a new arm only comes after that (reloads are serialized in Go). */
	atomic_store(&s->armed, 0);
	return 0;
}

int ncclbpf_reload_armed(int slot) {
	if (slot < 0 || slot >= NCCLBPF_NUM_SLOTS)
		return 0;
	return atomic_load(&nb_switches[slot].armed);
}

/* Declared in reload.h: where the live communicators stand against an activation. */
struct nb_at_arg {
	const uint64_t *ids, *ats;
	int n;
	uint64_t at;
	struct ncclbpf_at_check *out;
};

static void nb_check_one(struct nb_comm *c, void *arg) {
	struct nb_at_arg *a = arg;
	uint64_t at = a->at;
	for (int i = 0; i < a->n; i++)
		if (a->ids[i] == c->comm_id)
			at = a->ats[i];
	uint64_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
	a->out->live++;
	if (seq <= at)
		a->out->waiting++;
	if (seq >= at && !a->out->late) {
		a->out->late = 1;
		a->out->late_id = c->comm_id;
		a->out->late_seq = seq;
		a->out->late_at = at;
	}
}

void ncclbpf_comms_check_at(const uint64_t *ids, const uint64_t *ats, int n, uint64_t at,
                            struct ncclbpf_at_check *out) {
	struct ncclbpf_at_check zero = {0};
	*out = zero;
	struct nb_at_arg a = {ids, ats, n, at, out};
	nb_registry_each(nb_check_one, &a);
}

int ncclbpf_reload_cancel(int slot) {
	if (slot < 0 || slot >= NCCLBPF_NUM_SLOTS)
		return -1;
	struct nb_switch *s = &nb_switches[slot];
	if (!atomic_load(&s->armed))
		return -1;
	ncclbpf_slot_publish(slot, atomic_load_explicit(&s->old_word, memory_order_relaxed));
	atomic_store(&s->armed, 0);
	return 0;
}

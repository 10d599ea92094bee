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
 */
#include <stdatomic.h>

#include "ncclbpf.h"
#include "internal.h"
#include "reload.h"

struct nb_switch {
	_Atomic(uintptr_t) old_word, new_word;
	_Atomic uint64_t at;
	_Atomic int armed;
};

static struct nb_switch nb_switches[NCCLBPF_NUM_SLOTS];

static inline uint64_t nb_switch_call(struct nb_switch *s, uint64_t seq, void *ctx) {
	uintptr_t w = seq >= atomic_load_explicit(&s->at, memory_order_relaxed)
	                  ? atomic_load_explicit(&s->new_word, memory_order_relaxed)
	                  : atomic_load_explicit(&s->old_word, memory_order_relaxed);
	ncclbpf_prog_fn fn = (ncclbpf_prog_fn)(w & ~NCCLBPF_SLOT_FLAGS);
	if (fn == 0)
		return NCCLBPF_TUNER_DEFAULT; /* that bundle has no program for the hook */
	return fn(ctx);
}

__attribute__((aligned(16))) static uint64_t nb_switch_tuner(void *ctx) {
	return nb_switch_call(&nb_switches[NCCLBPF_SLOT_TUNER], ((struct ncclbpf_tuner_ctx *)ctx)->call_seq, ctx);
}

__attribute__((aligned(16))) static uint64_t nb_switch_chunk(void *ctx) {
	return nb_switch_call(&nb_switches[NCCLBPF_SLOT_CHUNK_SIZE], ((struct ncclbpf_chunk_ctx *)ctx)->call_seq, ctx);
}

int ncclbpf_reload_arm(int slot, uintptr_t new_word, uint64_t at) {
	if (slot < 0 || slot >= NCCLBPF_NUM_SLOTS)
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
		flags = cur & new_word & NCCLBPF_SLOT_FLAGS; /* skip an input only if neither reads it */
	atomic_store_explicit(&s->old_word, cur, memory_order_relaxed);
	atomic_store_explicit(&s->new_word, new_word, memory_order_relaxed);
	atomic_store_explicit(&s->at, slot == NCCLBPF_SLOT_CHUNK_SIZE && at != UINT64_MAX ? at + 1 : at,
	                      memory_order_relaxed);
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

/* SPDX-License-Identifier: MIT */
/*
 * grace.h: grace periods, for the tuner's, profiler's and net's slots alike.
 *
 * Every call into published code is bracketed by a reader's word (odd while inside), written by
 * one thread with plain stores; the publisher swaps the slot's pointer and then, to know that no
 * thread still runs the old code:
 *
 *   caller (NCCL's thread, per call)          publisher (Go, off the hot path)
 *   ---------------------------------         ------------------------------------------
 *   word = a+1           (odd: inside)        old = exchange(slot, new)
 *   compiler barrier                          nb_grace_fence(): membarrier(PRIVATE_EXPEDITED)
 *   fn = load_acquire(slot)                   nb_grace_wait_all(): for each reader's word:
 *   fn(ctx)                                       s = word; if s is odd: wait until word != s
 *   word = a+2           (release; even)      => nobody still runs `old`: it may be freed
 *
 * The membarrier() makes every running thread execute a full barrier, so after it either the
 * caller's "odd" store is visible to the publisher or the caller's load of the slot comes after the
 * exchange and sees the new code: the asymmetric-fence scheme of user-space RCU (membarrier
 * flavour). Each shim keeps its readers where it needs them (communicators, profiler threads, net
 * connections) and hands nb_grace_wait_all an iterator over their words.
 *
 * nb_grace_before_publish makes newly written code safe to run on every thread before its pointer
 * is stored (Arm's rule for cross-modifying code): the JIT cleans the data cache and invalidates
 * the instruction cache over the code, but a core that already fetched instructions at that
 * address (the pages of a freed program are often mapped again at the same address) may hold them
 * until it executes a context-synchronizing event. On AArch64 the publisher therefore issues
 * membarrier(PRIVATE_EXPEDITED_SYNC_CORE) first; without the command (Linux before 4.16) the
 * publish still proceeds. x86 needs nothing: its instruction fetch is coherent with stores.
 *
 * Both registrations happen at first use (a reload or publish, off NCCL's threads), not at load
 * time: in a process that already has threads, registering waits for an RCU grace period of the
 * kernel, which dlopen need not pay.
 */
#ifndef NCCLBPF_GRACE_H
#define NCCLBPF_GRACE_H

#include <stdatomic.h>
#include <stdint.h>

#define NB_GRACE_HIDDEN __attribute__((visibility("hidden")))

/* nb_grace_fence registers for membarrier once per process and makes every running thread of the
 * process execute a full barrier: 0, or -1 when the kernel lacks the command (then readers' words
 * prove nothing and old code must never be freed). */
int nb_grace_fence(void) NB_GRACE_HIDDEN;

/* An iterator over readers' words: each call returns the next word, NULL after the last. */
typedef _Atomic uint64_t *(*nb_grace_next_fn)(void *it);

/* nb_grace_wait_all waits, for every word next yields, until a word that is odd now has changed
 * (yielding the CPU, then sleeping 50 us a try after 1000 tries). Call it after nb_grace_fence. */
void nb_grace_wait_all(nb_grace_next_fn next, void *it) NB_GRACE_HIDDEN;

/* nb_grace_before_publish: call before storing a code pointer that is not NULL (see above). */
void nb_grace_before_publish(void) NB_GRACE_HIDDEN;

#endif /* NCCLBPF_GRACE_H */

/* SPDX-License-Identifier: MIT */
/* internal.h: C-only internals of the shim (not seen by Go). */
#ifndef NCCLBPF_INTERNAL_H
#define NCCLBPF_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include "shim.h"
#include "metrics.h"

#define NB_HIDDEN __attribute__((visibility("hidden")))

/* NCCL's logger (ncclDebugLogger_t) and the values we pass to it. */
typedef void (*nb_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
#define NB_LOG_WARN 2
#define NB_LOG_INFO 3
#define NB_SUBSYS_INIT 0x1
#define NB_SUBSYS_TUNING 0x40

/*
 * A hook slot. fn is read with an acquire load on every call; it is written only by
 * ncclbpf_slot_publish. One slot per cache line so that publishing one does not disturb readers of
 * another.
 */
struct nb_slot {
	_Atomic(uintptr_t) fn;
	char pad[64 - sizeof(uintptr_t)];
} __attribute__((aligned(64)));

extern struct nb_slot nb_slots[NCCLBPF_NUM_SLOTS] NB_HIDDEN;

/*
 * One recorded decision (decisions.h), 16 bytes, four to a cache line. what packs: bits 0-31 the low
 * half of seq + 1 (0: never written), 32-39 collective, 40-47 algorithm, 48-55 protocol (both as
 * int8: values outside -128..127 are recorded modulo 256), 56-63 channels (saturated to 255; a
 * negative count shows as 255). The digest has every value in full. The chunk size of the call,
 * when getChunkSize runs a program, is in the parallel nb_crec. No per-record lock: a reader takes
 * only the records of calls that the communicator's seq shows finished before and not overwritten
 * after its copy (decisions.c).
 */
#define NB_DREC_N 256
#define NB_DFLT_COLLS 16 /* collectives whose decisions left to NCCL are counted without a hash */
struct nb_drec {
	_Atomic uint64_t what, digest;
} __attribute__((aligned(16)));
struct nb_crec {
	_Atomic uint64_t seq1, chunk, digest; /* digest: after the chunk size was added */
};
/* One entry of the decision counts (metrics.h): key 0 = free; written by the owner thread only. */
struct nb_dent {
	_Atomic uint64_t key, count;
};

/* nb_registry_each calls fn on every live communicator under the registry lock (slot.c). */
struct nb_comm;
void nb_registry_each(void (*fn)(struct nb_comm *c, void *arg), void *arg) NB_HIDDEN;

/*
 * Per-communicator state, calloc'd by init and freed by finalize. The fields under "owner" are
 * written only by the thread that NCCL is currently using the communicator on (NCCL never uses one
 * communicator from two threads at once) and read by others only for statistics and grace periods,
 * so they are atomics accessed with plain (relaxed) loads and stores: no read-modify-write and no
 * fence on the hot path.
 */
struct nb_comm {
	/* owner */
	_Atomic uint64_t active;       /* odd while the owner runs a program (see slot.c) */
	_Atomic uint64_t seq;          /* getCollInfo calls so far */
	_Atomic uint64_t unrun; /* ... that ran no program (none published, or no usable table) */
	_Atomic uint64_t applied;
	_Atomic uint64_t rejected;
	_Atomic uint64_t clamped;
	_Atomic uint64_t chunk_calls;
	_Atomic uint64_t chunk_applied;
	_Atomic uint64_t chunk_rejected;
	_Atomic uint64_t digest; /* rolling digest of the decisions (decisions_fold.h) */
	/* owner: the tuner program's context (struct ncclbpf_tuner_ctx, tuner.c). init fills the
	 * communicator's fields once; each call stores only the call's own inputs (those the program
	 * reads) and resets the outputs. NCCL never runs one communicator on two threads at once. */
	_Alignas(64) unsigned char tctx[160];
	/* set by init, read-only afterwards */
	uint64_t comm_id;
	uint32_t n_ranks, n_nodes;
	int32_t nvl_domains, nvl_min, nvl_max;
	uint32_t abi;
	nb_logger_t log;
	/* registry links, under nb_registry_lock */
	struct nb_comm *prev, *next;
	/* owner: the last NB_DREC_N decisions, by seq % NB_DREC_N (decisions_fold.h) */
	struct nb_drec ring[NB_DREC_N];
	struct nb_crec ring_chunk[NB_DREC_N];
	/* owner: decision counts (metrics.h, metrics_fold.h): decisions left to NCCL by collective and
	 * size bucket in dflt (collectives 0..NB_DFLT_COLLS-1), everything else in dtab */
	_Atomic uint64_t dtab_overflow;
	struct nb_dent dtab[NCCLBPF_DTAB_N];
	_Atomic uint64_t dflt[NB_DFLT_COLLS][NCCLBPF_SIZE_BUCKETS];
};

/* nb_policy_calls is c's getCollInfo calls that ran a program (unrun first: it never exceeds the
 * seq read after it). */
static inline uint64_t nb_policy_calls(struct nb_comm *c) {
	uint64_t u = atomic_load_explicit(&c->unrun, memory_order_acquire);
	return atomic_load_explicit(&c->seq, memory_order_relaxed) - u;
}

void nb_register(struct nb_comm *c) NB_HIDDEN;
void nb_unregister(struct nb_comm *c) NB_HIDDEN;
/* ncclbpf_env_digest: the digest of the values the env plugin served (env.c); 0 without it. */
uint64_t ncclbpf_env_digest(void);

/* nb_enter/nb_leave bracket every call into published code (see slot.c for the protocol). */
static inline uint64_t nb_enter(struct nb_comm *c) {
	uint64_t a = atomic_load_explicit(&c->active, memory_order_relaxed);
	atomic_store_explicit(&c->active, a + 1, memory_order_relaxed);
	/* Compiler barrier only: the hardware ordering of this store before the slot load is
	 * provided by the membarrier() that ncclbpf_slot_synchronize issues. */
	atomic_signal_fence(memory_order_seq_cst);
	return a;
}

static inline void nb_leave(struct nb_comm *c, uint64_t a) {
	atomic_store_explicit(&c->active, a + 2, memory_order_release);
}

/* nb_leave_now is nb_leave from the mark itself: only the owner writes active, so the value it
 * stored at nb_enter is read back (store-forwarded) instead of being kept across the call. */
static inline void nb_leave_now(struct nb_comm *c) {
	uint64_t a = atomic_load_explicit(&c->active, memory_order_relaxed);
	atomic_store_explicit(&c->active, a + 1, memory_order_release);
}

static inline void nb_inc(_Atomic uint64_t *v) {
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1, memory_order_relaxed);
}

#endif /* NCCLBPF_INTERNAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * profiler_core.h: what the profiler shim's files share (private to them, not for cgo).
 *
 *   profiler.c         slots, activation mask, contexts (init, finalize), counters and the latency
 *                      histograms' read-out: the control plane's side
 *   profiler_events.c  events: pool, start, stop, record, completion, the latency histograms' counting
 *   profiler_abi.c     NCCL's profiler ABI v1 .. v7: descriptor decoding, the per-version adapters and
 *                      the exported ncclProfiler_vN structs
 *
 * The adapters call start_common, stop_event, record_common, init_common and finalize_common: one call
 * each, as when they lived in one file (hidden symbols, no PLT). What the hot path uses across files
 * is static inline here (slot_set, hook_needs, task_needs, lat_enabled, ...), or a global read directly.
 */
#ifndef NCCLBPF_PLUGIN_PROFILER_CORE_H
#define NCCLBPF_PLUGIN_PROFILER_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../include/ncclbpf_profiler.h"
#include "profiler.h"
#include "profiler_abi.h"
#include "metrics.h"

#define NBP_HIDDEN __attribute__((visibility("hidden")))

#define NBP_ALIGN 64
#define NBP_TAG_MASK ((uintptr_t)(NBP_ALIGN - 1))
/* Events are 256 bytes, 256-aligned: a handle's low 6 bits hold the generation tag, and the next two
 * say that the handle is a kernel channel kept in its task (no event of its own; see start_common),
 * counted in the task's expected channels or not. */
#define NBP_EV_ALIGN 256
#define NBP_H_LIGHT ((uintptr_t)64)
#define NBP_H_WITHIN ((uintptr_t)128)
#define NBP_H_BITS ((uintptr_t)(NBP_EV_ALIGN - 1))

/* Free events a thread keeps for its next allocations (struct thr). */
#define NBP_TCACHE 8
/* Threads that may keep a context's free events: a thread that exits keeps its few events for good,
 * so at most NBP_CACHERS * NBP_TCACHE events of a context can be lost that way (NCCL's user and proxy
 * threads are the usual two). */
#define NBP_CACHERS 4
struct thr;

typedef uint64_t (*nbp_prog_fn)(void *ctx);

enum { K_FREE = 0, K_TASK, K_KCH, K_PROXY_OP, K_STEP, K_PHASE };
/* The state word's low half: the pending count, and the top bit set once NCCL stopped the task (set
 * by the stop's own release: one compare-and-swap). */
#define ST_STOPPED 0x80000000u
#define PEND(s) ((uint32_t)(s) & ~ST_STOPPED)

struct ident {
	uint64_t seq, bytes;
	int32_t func, algo, proto, nchannels, peer, channel, rank, is_send;
	uint32_t hook;
	uint32_t variant, sym; /* v7: kernel variant (hash of its name), symmetric kernel */
	int32_t phase;         /* v7 kernel phase: NCCL's phaseId; -1 for other events */
	uint64_t user_tag;     /* v7 */
};

struct pev {
	_Alignas(NBP_EV_ALIGN) _Atomic uint64_t st; /* gen << 32 | ST_STOPPED? | pending */
	_Atomic uint32_t next;                   /* free-list link: index + 1, 0 = end */
	uint8_t kind;
	uint8_t within; /* kernel channel counted in the parent's expected channels */
	uint8_t needs;  /* NCCLBPF_PROF_NEED_* of its hook when it started (and the latency histograms') */
	uint8_t solo;   /* task that no child may reference (see start_common): its stop alone releases it */
	_Atomic uint32_t flags;
	struct pev *parent;
	uint32_t parent_gen;
	uint32_t expected;            /* task: kernel channels NCCL will report */
	_Atomic uint32_t kch_started; /* task: kernel channels seen so far */
	struct pctx *pc;              /* the context whose pool holds this event */
	_Atomic int32_t nchild;       /* proxy op: steps that completed (a task's channels: kch_started) */
	uint64_t start_ns;
	uint64_t stamp_ns;          /* task waiting for channels: coarse clock at its start (the sweep's age) */
	_Atomic uint64_t end_ns;    /* max over own stop and children */
	_Atomic uint64_t gpu_start; /* min, UINT64_MAX = none */
	_Atomic uint64_t gpu_end;   /* max, 0 = none */
	_Atomic uint64_t xfer;      /* proxy op: bytes of its steps; step: last transSize */
	struct ident id;
};

_Static_assert(sizeof(struct pev) == NBP_EV_ALIGN, "an event is one 256-byte slot");

/* One latency histogram of a context (metrics.h). key 0 = free: claimed by a compare-and-swap, as
 * several threads complete tasks of one context; counts are relaxed additions. */
/* A key is 1 << 63 | tag index << NBP_LAT_TAG_SHIFT | proto + 1 << 24 | algo + 1 << 16 | size bucket << 8
 * | collective. Tag index 0: untagged; 1..NCCLBPF_LAT_TAGS: pctx.lat_tags[index - 1]; NBP_LAT_TAG_OTHER:
 * tagged, no room. */
#define NBP_LAT_TAG_SHIFT 32
#define NBP_LAT_TAG_OTHER 0xffu
_Static_assert(NCCLBPF_LAT_TAGS < NBP_LAT_TAG_OTHER, "tag indexes fit 8 bits below the other tag");
struct lat_ent {
	_Alignas(NBP_ALIGN) _Atomic uint64_t key;
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t b[NCCLBPF_LAT_BUCKETS];
};

struct pctx {
	int version;
	uint64_t comm_id;
	int rank, nranks;
	pid_t pid;
	nbp_logger_t log;
	uint32_t n;
	struct pev *pool;
	uint64_t serial;       /* unique to this context in the process (thread caches) */
	struct thr *_Atomic cachers[NBP_CACHERS]; /* the threads that may keep its free events */
	_Atomic uint64_t head; /* tag << 32 | (index + 1) */
	_Atomic int reclaiming;
	_Atomic uint32_t reclaim_cursor;
	_Atomic uint32_t tick;
	_Atomic int waits;               /* a task waited for kernel channels: the sweep has work */
	_Atomic uint64_t swept_ns;       /* coarse clock at the last periodic sweep */
	_Atomic int kch_seen;            /* a kernel channel event arrived on this context */
	_Atomic int kch_absent;          /* concluded that NCCL sends none here */
	_Atomic uint64_t first_wait_ns;  /* first task stop that waited for channels, while none seen */
	uint64_t reclaim_ns;             /* NCCLBPF_PROF_RECLAIM_MS: age of a stuck task (set by init) */
	uint64_t kch_wait_ns;            /* NCCLBPF_PROF_KCH_WAIT_MS (set by init) */
	_Atomic uint64_t local_seq[NCCLBPF_PROF_NUM_HOOKS];
	_Atomic uint64_t dropped, forced, orphans;
	struct pctx *next_ctx; /* registry, under g_reg_lock */
	struct lat_ent *lat;   /* NCCLBPF_LAT_TAB_N latency histograms (metrics.h) */
	_Atomic uint64_t lat_overflow;
	/* The user tags of the latency histograms: slot i holds the tag of key tag index i + 1 (0: free),
	 * claimed in order and never freed (lat_tag_index); lat_tagged counts the entries of tagged keys. */
	_Atomic uint64_t lat_tags[NCCLBPF_LAT_TAGS];
	_Atomic uint32_t lat_tagged;
};

/* A hook slot: the entry point of the published program (0: none), one per cache line. The same
 * layout as the tuner's slots (plugin/internal.h). */
struct slot {
	_Alignas(NBP_ALIGN) _Atomic(uintptr_t) fn;
	_Atomic uint32_t needs; /* NCCLBPF_PROF_NEED_* of the program in fn (0 without one) */
};

/* A calling thread's record for grace periods, the same protocol as the tuner's per-communicator
 * `active` word (plugin/slot.c): odd while the thread runs published code. A profiler context is used
 * by several threads at once (user threads, the proxy thread), so the word is per thread; records
 * are claimed from a static table on a thread's first call (no allocation) and also count calls. */
struct thr {
	_Alignas(NBP_ALIGN) _Atomic uint64_t active;
	_Atomic int used;
	_Atomic uint64_t calls[NCCLBPF_PROF_LAST_HOOK + 1];
	/* Free events of one context (serial), kept by the thread that freed them for its next
	 * allocations: no compare-and-swap on the context's free stack while a thread both starts and
	 * completes events. Only this thread touches them; a context's serial is never reused, so
	 * events of a finalized context are never handed out. */
	uint64_t cache_serial;
	uint32_t cache_n;
	struct pev *cache[NBP_TCACHE];
};
#define NBP_MAX_THREADS 512

/* Shared state (defined in profiler.c, the thread records in profiler_events.c). */
extern struct slot nbp_slots[NCCLBPF_PROF_LAST_HOOK + 1] NBP_HIDDEN;
extern struct thr nbp_thr[NBP_MAX_THREADS] NBP_HIDDEN;
extern _Atomic uint64_t nbp_overflow_inflight NBP_HIDDEN; /* threads beyond the table: a shared counter */
extern _Atomic uint64_t nbp_overflow_calls[NCCLBPF_PROF_LAST_HOOK + 1] NBP_HIDDEN;
extern int *_Atomic nbp_mask_ptr NBP_HIDDEN; /* NCCL's activation mask (the last init's) */
extern _Atomic int nbp_lat_on NBP_HIDDEN;    /* NCCLBPF_LATENCY: -1 not read yet, 0, 1 */

/* Build with -DNBP_TRACE to print the first events NCCL sends (diagnosis on a real system). */
#ifdef NBP_TRACE
extern _Atomic int nbp_trace_n NBP_HIDDEN;
#define TRACE(...) do { if (atomic_fetch_add(&nbp_trace_n, 1) < NBP_TRACE) fprintf(stderr, "ncclbpf-trace: " __VA_ARGS__); } while (0)
#else
#define TRACE(...) do { } while (0)
#endif

static inline int slot_set(int hook) { return atomic_load_explicit(&nbp_slots[hook].fn, memory_order_relaxed) != 0; }

/* hook_needs: what the program in hook's slot reads (0 without a program). */
static inline uint32_t hook_needs(int hook) {
	return slot_set(hook) ? atomic_load_explicit(&nbp_slots[hook].needs, memory_order_relaxed) : 0;
}

/* A collective with both times read: the latency histograms take it. */
#define NBP_NEED_TIMED (NCCLBPF_PROF_NEED_START | NCCLBPF_PROF_NEED_END)
/* A task's completion depends on its children (kernel channels, proxy operations) only for these. */
#define NBP_NEED_COMPLETION (NCCLBPF_PROF_NEED_END | NCCLBPF_PROF_NEED_CHILDREN)

/* lat_enabled: NCCLBPF_LATENCY, collective events for the latency histograms without a profiler
 * program (read once, by nbp_lat_read_env). */
int nbp_lat_read_env(void) NBP_HIDDEN;
static inline int lat_enabled(void) {
	int e = atomic_load_explicit(&nbp_lat_on, memory_order_relaxed);
	return e >= 0 ? e : nbp_lat_read_env();
}

/* phases_wanted: whether NCCL, speaking profiler ABI version, is to send kernel phases: under v7, for a
 * kernel_phase_end program. */
static inline int phases_wanted(int version) { return version >= 7 && slot_set(NCCLBPF_PROF_KERNEL_PHASE_END); }

/* children_need_parents: whether new tasks wait for their kernel channels (and so stay alive for their proxy
 * operations and kernel phases): when a kernel_ch_end, proxy_op_end or (v7) kernel_phase_end program needs
 * them as parents. */
static inline int children_need_parents(int version) {
	return slot_set(NCCLBPF_PROF_KERNEL_CH_END) || slot_set(NCCLBPF_PROF_PROXY_OP_END) || phases_wanted(version);
}

/* task_needs is what a task of hook needs when it starts now: its program's needs, and for
 * collectives those of the latency histograms when NCCLBPF_LATENCY is on. */
static inline uint32_t task_needs(int hook) {
	uint32_t n = hook_needs(hook);
	if (hook == NCCLBPF_PROF_COLL_END && lat_enabled())
		n |= NCCLBPF_PROF_NEED_START | NCCLBPF_PROF_NEED_END | NCCLBPF_PROF_NEED_CHILDREN;
	return n;
}

/* A version-neutral view of what startEvent needs. */
struct dview {
	uint64_t type;
	void *parent;
	int rank;
	struct ident id;
	uint32_t nch;      /* task: kernel channels to expect */
	uint64_t ptimer;   /* kernel channel GPU start */
	pid_t pid;         /* proxy op */
	int has_pid;
};

/* The version-neutral entry points the adapters call (profiler_events.c, profiler.c). */
void start_common(struct pctx *pc, void **eHandle, struct dview *v) NBP_HIDDEN;
nbp_result_t stop_event(void *handle) NBP_HIDDEN;
nbp_result_t init_common(void **context, int version, uint64_t comm_id, int *mask, int nranks, int rank,
                         nbp_logger_t log) NBP_HIDDEN;
nbp_result_t finalize_common(void *context) NBP_HIDDEN;

/* amax raises *a to v (relaxed). */
static inline void amax(_Atomic uint64_t *a, uint64_t v) {
	uint64_t c = atomic_load_explicit(a, memory_order_relaxed);
	while (v > c && !atomic_compare_exchange_weak_explicit(a, &c, v, memory_order_relaxed, memory_order_relaxed)) {
	}
}

/* handle_event resolves a handle NCCL passes back to stop/record: its event, if live with the
 * handle's generation. */
static inline struct pev *handle_event(void *handle, uint32_t *gen) {
	if (!handle) return NULL;
	struct pev *e = (struct pev *)((uintptr_t)handle & ~NBP_H_BITS);
	uint64_t s = atomic_load(&e->st);
	*gen = (uint32_t)(s >> 32);
	if ((*gen & NBP_TAG_MASK) != ((uintptr_t)handle & NBP_TAG_MASK) || PEND(s) == 0) return NULL;
	return e;
}

/* record_common is every version's recordEventState (the adapters pass the state's argument). */
static inline void record_common(void *handle, nbp_state_t st, uint64_t arg, int has_arg) {
	TRACE("record %p state %d arg %#llx\n", handle, st, (unsigned long long)arg);
	uint32_t gen;
	struct pev *e = handle_event(handle, &gen);
	if (!e) return;
	if ((uintptr_t)handle & NBP_H_LIGHT) { /* a kernel channel kept in its task e */
		if (st == NBP_ST_KERNEL_CH_STOP && has_arg && arg) amax(&e->gpu_end, arg);
		return;
	}
	if (((st == NBP_ST_KERNEL_CH_STOP && e->kind == K_KCH) || (st == NBP_ST_KERNEL_PHASE_STOP && e->kind == K_PHASE)) &&
	    has_arg && arg) {
		atomic_store_explicit(&e->gpu_end, arg, memory_order_relaxed);
	} else if (e->kind == K_STEP && has_arg && st >= NBP_ST_STEP_SEND_GPU_WAIT && st <= NBP_ST_STEP_RECV_GPU_WAIT) {
		atomic_store_explicit(&e->xfer, arg, memory_order_relaxed);
	}
}

#endif /* NCCLBPF_PLUGIN_PROFILER_CORE_H */

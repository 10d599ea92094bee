/* SPDX-License-Identifier: MIT */
/*
 * profiler.c: the profiler side of libncclbpf.so.
 *
 * NCCL calls the exported ncclProfiler_vN structs (v7 .. v1). Everything below runs on NCCL's threads
 * (the user thread that enqueues, the proxy thread that sees kernel channels and network operations)
 * and therefore uses no lock, no allocation and no Go:
 *
 *  - Events live in a pool preallocated per context (one context per communicator, allocated in init).
 *    Free events form a lock-free stack (index + ABA tag in one 64-bit word); a thread keeps up to 8
 *    events it freed for its next allocations (struct thr; at most 4 threads per context).
 *  - Every live event has a state word `st` = generation << 32 | ST_STOPPED | pending. `pending`
 *    counts what the event still waits for: its own stopEvent, the kernel channels NCCL will report
 *    for it (a task's nChannels, ABI v3+, when it waits for them), and one reference per live child
 *    (proxy op, proxy step, channel). Whoever brings `pending` to 0 completes the event: it runs the
 *    hook's program, hands the result to the parent, and frees the event (generation + 1). A task
 *    that no child may reference (solo: no channel wait, nothing read from children, no child program
 *    that needs parents) has its stop as the only unit: the stop releases it with a plain store.
 *  - Handles given to NCCL are the event's address with the low 6 bits holding its generation, so
 *    a stale handle (NCCL passes a task's handle as parentObj long after the task's own stop) is
 *    recognised instead of attaching a child to whatever reuses the slot. Without a kernel_ch_end
 *    program a kernel channel has no event: its handle is its task's with NBP_H_LIGHT set.
 *  - What a hook's program reads (NCCLBPF_PROF_NEED_*, published with it) decides the work: the
 *    activation mask (ncclbpf_prof_wanted_mask), whether a task waits for its channels, the clock
 *    reads. A task (collective or p2p) that waits ends when it was stopped ("enqueued", per NCCL)
 *    and all its kernel channels and proxy operations have completed; its end time is read then.
 *  - Tasks whose announced kernel channels never come do not pile up: a 1-rank communicator (NCCL
 *    sends none there) or a context that never saw one within NCCLBPF_PROF_KCH_WAIT_MS stops
 *    waiting for them (NCCLBPF_PROF_F_HOST_ONLY); a task stuck longer than NCCLBPF_PROF_RECLAIM_MS
 *    is completed by a small periodic sweep, or when the pool runs dry (NCCLBPF_PROF_F_FORCED).
 *    An event the pool cannot hold is dropped (*eHandle = NULL), which NCCL handles.
 *
 * Programs run through one slot per hook (see profiler.h): an atomically swapped entry point, and
 * per calling thread an odd/even word that gives the control plane a grace period before it frees
 * old code (the protocol of grace.h, with the membarrier-based asymmetric fence).
 *
 * Environment (read by each init): NCCLBPF_PROF_POOL (events per communicator, default 4096),
 * NCCLBPF_PROF_RECLAIM_MS (default 1000), NCCLBPF_PROF_KCH_WAIT_MS (default 5000).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include "../include/ncclbpf_profiler.h"
#include "profiler.h"
#include "profiler_abi.h"
#include "metrics.h"
#include "clock.h"
#include "grace.h"
#include "loader.h"

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

static struct slot g_slots[NCCLBPF_PROF_LAST_HOOK + 1];
static struct thr g_thr[NBP_MAX_THREADS];
static _Atomic uint64_t g_overflow_inflight; /* threads beyond the table: a shared counter */
static _Atomic uint64_t g_overflow_calls[NCCLBPF_PROF_LAST_HOOK + 1];
static __thread struct thr *t_rec __attribute__((tls_model("initial-exec")));
static __thread int t_rec_none __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t g_ctx_serial;
static int *_Atomic g_mask_ptr;
static _Atomic int g_version;
static _Atomic int g_mask_stored;

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pctx *g_ctxs;
static uint64_t g_done_dropped, g_done_forced, g_done_orphans;

/* Build with -DNBP_TRACE to print the first events NCCL sends (diagnosis on a real system). */
#ifdef NBP_TRACE
static _Atomic int trace_n;
#define TRACE(...) do { if (atomic_fetch_add(&trace_n, 1) < NBP_TRACE) fprintf(stderr, "ncclbpf-trace: " __VA_ARGS__); } while (0)
#else
#define TRACE(...) do { } while (0)
#endif

static void logmsg(struct pctx *pc, int level, const char *msg) {
	if (pc && pc->log) pc->log(level, NBP_SUBSYS_PROFILE | NBP_SUBSYS_INIT, __FILE__, __LINE__, "%s", msg);
}

/* ------------------------------------------------------------------------------------------------
 * Slots */

int ncclbpf_prof_hook_id(const char *name) {
	static const char *names[] = {NULL, "profiler/coll_end", "profiler/p2p_end", "profiler/kernel_ch_end",
	                              "profiler/proxy_op_end", "profiler/kernel_phase_end"};
	if (!name) return -1;
	for (int i = NCCLBPF_PROF_FIRST_HOOK; i <= NCCLBPF_PROF_LAST_HOOK; i++)
		if (strcmp(name, names[i]) == 0) return i;
	return -1;
}

/* The needs are stored before the entry: an event that starts while a reload swaps the program may
 * pair the new program with the old needs (or the reverse) for that one event; a field then left
 * unfilled reads 0 (start_ns: end_ns), as for an event that started while its hook had no program. */
uintptr_t ncclbpf_prof_publish_needs(int hook, uintptr_t fn, uint32_t needs) {
	if (hook < NCCLBPF_PROF_FIRST_HOOK || hook > NCCLBPF_PROF_LAST_HOOK) return 0;
	if (fn) nb_grace_before_publish();
	atomic_store_explicit(&g_slots[hook].needs, fn ? needs & NCCLBPF_PROF_NEED_ALL : 0, memory_order_relaxed);
	return atomic_exchange_explicit(&g_slots[hook].fn, fn, memory_order_acq_rel);
}

uintptr_t ncclbpf_prof_publish(int hook, uintptr_t fn) { return ncclbpf_prof_publish_needs(hook, fn, NCCLBPF_PROF_NEED_ALL); }

uint32_t ncclbpf_prof_needs(int hook) {
	if (hook < NCCLBPF_PROF_FIRST_HOOK || hook > NCCLBPF_PROF_LAST_HOOK) return 0;
	return atomic_load(&g_slots[hook].fn) ? atomic_load(&g_slots[hook].needs) : 0;
}

/* The profiler's threads as readers of grace.h. */
static _Atomic uint64_t *thr_next(void *it) {
	int *i = it;
	for (; *i < NBP_MAX_THREADS; ++*i)
		if (atomic_load_explicit(&g_thr[*i].used, memory_order_acquire)) return &g_thr[(*i)++].active;
	return NULL;
}

int ncclbpf_prof_synchronize(void) {
	if (nb_grace_fence() != 0) return -1;
	int i = 0;
	nb_grace_wait_all(thr_next, &i);
	while (atomic_load(&g_overflow_inflight) != 0) sched_yield();
	return 0;
}

static inline int slot_set(int hook) { return atomic_load_explicit(&g_slots[hook].fn, memory_order_relaxed) != 0; }

/* hook_needs: what the program in hook's slot reads (0 without a program). */
static inline uint32_t hook_needs(int hook) {
	return slot_set(hook) ? atomic_load_explicit(&g_slots[hook].needs, memory_order_relaxed) : 0;
}

/* A collective with both times read: the latency histograms take it. */
#define NBP_NEED_TIMED (NCCLBPF_PROF_NEED_START | NCCLBPF_PROF_NEED_END)
/* A task's completion depends on its children (kernel channels, proxy operations) only for these. */
#define NBP_NEED_COMPLETION (NCCLBPF_PROF_NEED_END | NCCLBPF_PROF_NEED_CHILDREN)

/* NCCLBPF_LATENCY: collective events for the latency histograms without a profiler program. */
static int lat_enabled(void) {
	static _Atomic int v = -1;
	int e = atomic_load_explicit(&v, memory_order_relaxed);
	if (e < 0) {
		const char *s = getenv("NCCLBPF_LATENCY");
		e = s && (!strcmp(s, "1") || !strcasecmp(s, "on") || !strcasecmp(s, "yes") || !strcasecmp(s, "true"));
		atomic_store(&v, e);
	}
	return e;
}

int ncclbpf_metrics_latency_enabled(void) { return lat_enabled(); }

int ncclbpf_metrics_latency(struct ncclbpf_latency_hist *out, int max, uint64_t *overflow) {
	int n = 0;
	uint64_t ov = 0;
	pthread_mutex_lock(&g_reg_lock);
	for (struct pctx *pc = g_ctxs; pc; pc = pc->next_ctx) {
		ov += atomic_load_explicit(&pc->lat_overflow, memory_order_relaxed);
		if (!pc->lat) continue;
		for (int i = 0; i < NCCLBPF_LAT_TAB_N && n < max; i++) {
			struct lat_ent *l = &pc->lat[i];
			uint64_t k = atomic_load_explicit(&l->key, memory_order_acquire);
			if (k == 0) continue;
			struct ncclbpf_latency_hist *h = &out[n];
			memset(h, 0, sizeof *h);
			h->comm_id = pc->comm_id;
			h->rank = pc->rank;
			h->coll = (int32_t)(int8_t)(uint8_t)k;
			h->size_bucket = (int32_t)(uint8_t)(k >> 8);
			h->algo = (int32_t)(uint8_t)(k >> 16) - 1;
			h->proto = (int32_t)(uint8_t)(k >> 24) - 1;
			uint32_t ti = (uint32_t)(k >> NBP_LAT_TAG_SHIFT) & 0xff;
			h->other_tag = ti == NBP_LAT_TAG_OTHER;
			if (ti >= 1 && ti <= NCCLBPF_LAT_TAGS) h->user_tag = atomic_load_explicit(&pc->lat_tags[ti - 1], memory_order_acquire);
			/* The count is the sum of the buckets read (a task completing meanwhile may be in the
			 * sum of latencies and not yet in the buckets, or the reverse). */
			h->sum_ns = atomic_load_explicit(&l->sum_ns, memory_order_relaxed);
			uint64_t tot = 0;
			for (int b = 0; b < NCCLBPF_LAT_BUCKETS; b++) tot += h->buckets[b] = atomic_load_explicit(&l->b[b], memory_order_relaxed);
			h->count = tot;
			n++;
		}
	}
	pthread_mutex_unlock(&g_reg_lock);
	if (overflow) *overflow = ov;
	return n;
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

/* The mask asks for the event kinds the published programs consume, nothing more: a task kind when
 * its hook has a program; kernel channels (v3+) only when a task program reads what depends on them
 * (completion time, GPU span, children), or the kernel_ch_end/proxy_op_end programs need their tasks
 * as parents; proxy steps only when the proxy_op_end program reads its completion time, bytes or
 * steps; kernel phases (v7) only for a kernel_phase_end program, with the collectives and kernel channels
 * that are their parents. A p2p-counting program that reads no time gets P2p events only. NCCL copies the mask into
 * each task at its API call; one store changes all bits at once. */
int ncclbpf_prof_wanted_mask(int version) {
	int m = 0, kch = 0;
	if (slot_set(NCCLBPF_PROF_COLL_END)) {
		m |= NBP_EV_COLL;
		kch |= (task_needs(NCCLBPF_PROF_COLL_END) & NBP_NEED_COMPLETION) != 0;
	}
	if (slot_set(NCCLBPF_PROF_P2P_END)) {
		m |= NBP_EV_P2P;
		kch |= (task_needs(NCCLBPF_PROF_P2P_END) & NBP_NEED_COMPLETION) != 0;
	}
	if (slot_set(NCCLBPF_PROF_PROXY_OP_END)) {
		m |= NBP_EV_PROXY_OP;
		if (hook_needs(NCCLBPF_PROF_PROXY_OP_END) & NBP_NEED_COMPLETION) m |= NBP_EV_PROXY_STEP;
	}
	if (lat_enabled()) { /* the latency histograms (metrics.h): collectives with their channels */
		m |= NBP_EV_COLL;
		kch = 1;
	}
	if (phases_wanted(version)) m |= NBP_EV_KERNEL_PHASE | NBP_EV_COLL;
	if (children_need_parents(version)) kch = 1;
	if (version >= 3 && kch) m |= NBP_EV_KERNEL_CH;
	return m;
}

int ncclbpf_prof_refresh_mask(void) {
	int *p = atomic_load(&g_mask_ptr);
	if (!p) return -1;
	int m = ncclbpf_prof_wanted_mask(atomic_load(&g_version));
	__atomic_store_n(p, m, __ATOMIC_RELAXED);
	atomic_store(&g_mask_stored, m);
	return m;
}

void ncclbpf_prof_get_stats(struct ncclbpf_prof_stats *out) {
	if (!out) return;
	memset(out, 0, sizeof(*out));
	for (int i = NCCLBPF_PROF_FIRST_HOOK; i <= NCCLBPF_PROF_LAST_HOOK; i++) {
		out->calls[i] = atomic_load_explicit(&g_overflow_calls[i], memory_order_relaxed);
		for (int t = 0; t < NBP_MAX_THREADS; t++) out->calls[i] += atomic_load_explicit(&g_thr[t].calls[i], memory_order_relaxed);
	}
	pthread_mutex_lock(&g_reg_lock);
	out->events_dropped = g_done_dropped;
	out->events_forced = g_done_forced;
	out->orphans = g_done_orphans;
	for (struct pctx *pc = g_ctxs; pc; pc = pc->next_ctx) {
		out->contexts++;
		out->events_dropped += atomic_load(&pc->dropped);
		out->events_forced += atomic_load(&pc->forced);
		out->orphans += atomic_load(&pc->orphans);
	}
	pthread_mutex_unlock(&g_reg_lock);
	out->version = atomic_load(&g_version);
	out->mask = atomic_load(&g_mask_stored);
}

static struct thr *claim_thr(void) {
	if (t_rec_none) return NULL;
	for (int i = 0; i < NBP_MAX_THREADS; i++) {
		int z = 0;
		if (atomic_load_explicit(&g_thr[i].used, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&g_thr[i].used, &z, 1))
			return t_rec = &g_thr[i];
	}
	t_rec_none = 1;
	return NULL;
}

static inline struct thr *thr_rec(void) { return t_rec ? t_rec : claim_thr(); }

/* run_hook calls the program in hook's slot on c, inside the thread's grace-period bracket: two
 * plain stores and a load, no read-modify-write (see ncclbpf_prof_synchronize). */
static inline void run_hook(int hook, struct ncclbpf_prof_ctx *c) {
	struct thr *r = thr_rec();
	if (__builtin_expect(r != NULL, 1)) {
		uint64_t a = atomic_load_explicit(&r->active, memory_order_relaxed);
		atomic_store_explicit(&r->active, a + 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		uintptr_t f = atomic_load_explicit(&g_slots[hook].fn, memory_order_acquire);
		if (f) {
			(void)((nbp_prog_fn)f)(c);
			atomic_store_explicit(&r->calls[hook], atomic_load_explicit(&r->calls[hook], memory_order_relaxed) + 1,
			                      memory_order_relaxed);
		}
		atomic_store_explicit(&r->active, a + 2, memory_order_release);
		return;
	}
	atomic_fetch_add(&g_overflow_inflight, 1);
	uintptr_t f = atomic_load(&g_slots[hook].fn);
	if (f) {
		(void)((nbp_prog_fn)f)(c);
		atomic_fetch_add_explicit(&g_overflow_calls[hook], 1, memory_order_relaxed);
	}
	atomic_fetch_sub(&g_overflow_inflight, 1);
}

/* ------------------------------------------------------------------------------------------------
 * Pool */

static inline uint32_t ev_index(struct pctx *pc, struct pev *e) { return (uint32_t)(e - pc->pool); }

static struct pev *pool_pop(struct pctx *pc) {
	uint64_t h = atomic_load_explicit(&pc->head, memory_order_acquire);
	for (;;) {
		uint32_t idx1 = (uint32_t)h;
		if (idx1 == 0) return NULL;
		struct pev *e = &pc->pool[idx1 - 1];
		uint32_t nxt = atomic_load_explicit(&e->next, memory_order_relaxed);
		uint64_t nh = ((h >> 32) + 1) << 32 | nxt;
		if (atomic_compare_exchange_weak_explicit(&pc->head, &h, nh, memory_order_acq_rel, memory_order_acquire))
			return e;
	}
}

static void pool_push(struct pctx *pc, struct pev *e) {
	uint64_t h = atomic_load_explicit(&pc->head, memory_order_relaxed);
	for (;;) {
		atomic_store_explicit(&e->next, (uint32_t)h, memory_order_relaxed);
		uint64_t nh = ((h >> 32) + 1) << 32 | (ev_index(pc, e) + 1);
		if (atomic_compare_exchange_weak_explicit(&pc->head, &h, nh, memory_order_release, memory_order_relaxed))
			return;
	}
}

static inline void *handle_of(struct pev *e, uint32_t gen) { return (void *)((uintptr_t)e | (gen & NBP_TAG_MASK)); }

/* from_handle returns the event a handle designates, if it lies in pc's pool, else NULL. */
static inline struct pev *from_handle(struct pctx *pc, void *h, uint32_t *tag) {
	uintptr_t u = (uintptr_t)h;
	struct pev *e = (struct pev *)(u & ~NBP_H_BITS);
	if (!pc || (u & (NBP_H_LIGHT | NBP_H_WITHIN)) || e < pc->pool || e >= pc->pool + pc->n) return NULL;
	*tag = (uint32_t)(u & NBP_TAG_MASK);
	return e;
}

/* acquire takes one reference on a live event whose generation matches tag. */
static int acquire(struct pev *e, uint32_t tag, uint32_t *gen) {
	uint64_t s = atomic_load(&e->st);
	for (;;) {
		if (PEND(s) == 0 || ((s >> 32) & NBP_TAG_MASK) != tag || e->solo) return 0;
		if (atomic_compare_exchange_weak(&e->st, &s, s + 1)) {
			*gen = (uint32_t)(s >> 32);
			return 1;
		}
	}
}

/* release drops k units of pending if e is still generation gen, and adds the flags mark
 * (ST_STOPPED or 0) to what stays pending; returns 1 if that completed it. */
static int release_mark(struct pev *e, uint32_t gen, uint32_t k, uint32_t mark) {
	uint64_t s = atomic_load(&e->st);
	for (;;) {
		uint32_t p = PEND(s);
		if ((uint32_t)(s >> 32) != gen || p == 0) return 0;
		uint32_t np = p > k ? p - k : 0;
		uint32_t lo = np ? np | ((uint32_t)s & ST_STOPPED) | mark : 0;
		if (atomic_compare_exchange_weak(&e->st, &s, (uint64_t)gen << 32 | lo)) return np == 0;
	}
}
static inline int release(struct pev *e, uint32_t gen, uint32_t k) { return release_mark(e, gen, k, 0); }

static inline struct thr *thr_rec(void);

/* may_cache: whether r is (or now becomes) one of pc's NBP_CACHERS caching threads. */
static int may_cache(struct pctx *pc, struct thr *r) {
	for (int i = 0; i < NBP_CACHERS; i++) {
		struct thr *o = atomic_load_explicit(&pc->cachers[i], memory_order_relaxed);
		if (o == r) return 1;
		if (!o && atomic_compare_exchange_strong(&pc->cachers[i], &o, r)) return 1;
		if (o == r) return 1;
	}
	return 0;
}

static void ev_free(struct pctx *pc, struct pev *e) {
	uint64_t s = atomic_load_explicit(&e->st, memory_order_relaxed);
	e->kind = K_FREE;
	atomic_store_explicit(&e->st, ((s >> 32) + 1) << 32, memory_order_release);
	struct thr *r = thr_rec();
	/* (not in small pools, where the few events kept by threads would be missed) */
	if (r && pc->n >= 64 * NBP_TCACHE && r->cache_n < NBP_TCACHE &&
	    (r->cache_serial == pc->serial || (r->cache_n == 0 && may_cache(pc, r)))) {
		r->cache_serial = pc->serial;
		r->cache[r->cache_n++] = e;
		return;
	}
	pool_push(pc, e);
}

/* complete's t: the time just read by the caller, or 0 (complete reads the clock if the event needs
 * its end), or NBP_NO_CLOCK (the sweep: the end is what was recorded). */
#define NBP_NO_CLOCK UINT64_MAX
static void complete(struct pctx *pc, struct pev *e, uint32_t gen, uint64_t t);

/* sweep completes tasks among pool entries [from, from+count) that NCCL stopped at least min_age ns
 * ago and that only wait for kernel channels which have not come (no live child), marking them
 * with flag. One thread at a time; others skip. */
static void sweep(struct pctx *pc, uint32_t from, uint32_t count, uint64_t min_age, uint32_t flag) {
	int expect = 0;
	if (!atomic_compare_exchange_strong(&pc->reclaiming, &expect, 1)) return;
	uint64_t t = nb_coarse_ns();
	for (uint32_t j = 0; j < count && j < pc->n; j++) {
		struct pev *e = &pc->pool[(from + j) % pc->n];
		uint64_t s = atomic_load(&e->st);
		if (PEND(s) == 0 || e->kind != K_TASK) continue;
		if (!((uint32_t)s & ST_STOPPED) || (min_age && t - e->stamp_ns < min_age + nb_coarse_res_ns)) continue;
		/* Stopped, so pending = unstarted expected channels + 2 per live expected channel + 1 per
		 * other live child: it equals the unstarted channels exactly when no child is live. */
		uint32_t ks = atomic_load(&e->kch_started);
		uint32_t unstarted = e->expected > ks ? e->expected - ks : 0;
		if (PEND(s) != unstarted) continue;
		uint32_t gen = (uint32_t)(s >> 32);
		if (atomic_compare_exchange_strong(&e->st, &s, (uint64_t)gen << 32)) {
			atomic_fetch_or(&e->flags, flag);
			if (flag & NCCLBPF_PROF_F_FORCED) atomic_fetch_add_explicit(&pc->forced, 1, memory_order_relaxed);
			complete(pc, e, gen, NBP_NO_CLOCK);
		}
	}
	atomic_store(&pc->reclaim_cursor, (from + count) % pc->n);
	atomic_store(&pc->reclaiming, 0);
}

/* reclaim runs when the pool is empty: a full sweep of tasks stopped more than the reclaim age ago. */
static void reclaim(struct pctx *pc) { sweep(pc, 0, pc->n, pc->reclaim_ns, NCCLBPF_PROF_F_FORCED); }

/* maintain runs at each task start (NCCL's user thread):
 *  - if this context has never seen a kernel channel although a task waited for some for longer
 *    than NCCLBPF_PROF_KCH_WAIT_MS (default 5 s: NCCL's first collectives may set up connections),
 *    NCCL does not send them here: tasks stop waiting for them (they end at their stop, with
 *    NCCLBPF_PROF_F_HOST_ONLY). A later kernel channel turns waiting back on for new tasks;
 *  - every 64 task starts (at most once a millisecond, and only once a task of the context waited
 *    for channels), 64 pool entries are swept for tasks stuck longer than the reclaim age (a
 *    channel NCCL announced but never reported), so stuck events never pile up. */
static void maintain(struct pctx *pc) {
	if (!atomic_load_explicit(&pc->kch_seen, memory_order_relaxed) &&
	    !atomic_load_explicit(&pc->kch_absent, memory_order_relaxed)) {
		uint64_t f = atomic_load_explicit(&pc->first_wait_ns, memory_order_relaxed);
		if (f && nb_coarse_ns() - f > pc->kch_wait_ns + nb_coarse_res_ns) {
			atomic_store(&pc->kch_absent, 1);
			sweep(pc, 0, pc->n, 0, NCCLBPF_PROF_F_HOST_ONLY);
		}
	}
	uint32_t tick = atomic_load_explicit(&pc->tick, memory_order_relaxed) + 1;
	atomic_store_explicit(&pc->tick, tick, memory_order_relaxed);
	if ((tick & 63) != 0 || !atomic_load_explicit(&pc->waits, memory_order_relaxed)) return;
	/* At most one chunk a millisecond: each entry read is a cache miss. */
	uint64_t now = nb_coarse_ns();
	if (now - atomic_load_explicit(&pc->swept_ns, memory_order_relaxed) < 1000000) return;
	atomic_store_explicit(&pc->swept_ns, now, memory_order_relaxed);
	sweep(pc, atomic_load_explicit(&pc->reclaim_cursor, memory_order_relaxed), 64, pc->reclaim_ns, NCCLBPF_PROF_F_FORCED);
}

/* ev_alloc takes a free event and makes it live with `pending` units; *gen receives its generation. */
static inline __attribute__((always_inline)) struct pev *ev_alloc(struct pctx *pc, int kind, uint32_t *gen) {
	struct thr *r = thr_rec();
	struct pev *e = r && r->cache_n && r->cache_serial == pc->serial ? r->cache[--r->cache_n] : pool_pop(pc);
	if (!e) {
		reclaim(pc);
		e = pool_pop(pc);
		if (!e) {
			atomic_fetch_add_explicit(&pc->dropped, 1, memory_order_relaxed);
			return NULL;
		}
	}
	*gen = (uint32_t)(atomic_load_explicit(&e->st, memory_order_relaxed) >> 32);
	e->kind = (uint8_t)kind;
	e->within = 0;
	e->needs = 0;
	e->solo = 0;
	e->stamp_ns = 0;
	atomic_store_explicit(&e->flags, 0, memory_order_relaxed);
	e->parent = NULL;
	e->parent_gen = 0;
	e->expected = 0;
	atomic_store_explicit(&e->kch_started, 0, memory_order_relaxed);
	e->pc = pc;
	atomic_store_explicit(&e->nchild, 0, memory_order_relaxed);
	atomic_store_explicit(&e->end_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&e->gpu_start, UINT64_MAX, memory_order_relaxed);
	atomic_store_explicit(&e->gpu_end, 0, memory_order_relaxed);
	atomic_store_explicit(&e->xfer, 0, memory_order_relaxed);
	return e;
}

static inline void publish_live(struct pev *e, uint32_t gen, uint32_t pending) {
	atomic_store_explicit(&e->st, (uint64_t)gen << 32 | pending, memory_order_release);
}

static inline void amax(_Atomic uint64_t *a, uint64_t v) {
	uint64_t c = atomic_load_explicit(a, memory_order_relaxed);
	while (v > c && !atomic_compare_exchange_weak_explicit(a, &c, v, memory_order_relaxed, memory_order_relaxed)) {
	}
}
static inline void amin(_Atomic uint64_t *a, uint64_t v) {
	uint64_t c = atomic_load_explicit(a, memory_order_relaxed);
	while (v < c && !atomic_compare_exchange_weak_explicit(a, &c, v, memory_order_relaxed, memory_order_relaxed)) {
	}
}

/* ------------------------------------------------------------------------------------------------
 * Completion */

/* fill_ctx writes every field one by one (a memset of the structure first costs more than the rest:
 * compilers make it a string instruction). */
static inline __attribute__((always_inline)) void fill_ctx(struct pctx *pc, struct pev *e, int hook, struct ncclbpf_prof_ctx *c) {
	c->comm_id = pc->comm_id;
	c->seq = e->id.seq;
	c->local_seq = 0;
	/* a locked add per event only for a program that reads the count */
	if (atomic_load_explicit(&g_slots[hook].needs, memory_order_relaxed) & NCCLBPF_PROF_NEED_SEQ)
		c->local_seq = atomic_fetch_add_explicit(&pc->local_seq[hook], 1, memory_order_relaxed);
	c->bytes = e->id.bytes;
	c->rank = e->id.rank;
	c->n_ranks = pc->nranks;
	c->func = e->id.func;
	c->algorithm = e->id.algo;
	c->protocol = e->id.proto;
	c->n_channels = e->id.nchannels;
	c->peer = e->id.peer;
	c->channel_id = e->id.channel;
	c->start_ns = e->start_ns;
	c->end_ns = atomic_load_explicit(&e->end_ns, memory_order_relaxed);
	if (!c->start_ns) c->start_ns = c->end_ns; /* started while its hook had no program */
	if (c->end_ns < c->start_ns) c->end_ns = c->start_ns;
	c->duration_ns = c->end_ns - c->start_ns;
	uint64_t gs = atomic_load_explicit(&e->gpu_start, memory_order_relaxed);
	uint64_t ge = atomic_load_explicit(&e->gpu_end, memory_order_relaxed);
	uint32_t fl = atomic_load_explicit(&e->flags, memory_order_relaxed);
	c->gpu_duration_ns = 0;
	if (gs != UINT64_MAX && ge != 0 && ge >= gs) {
		c->gpu_duration_ns = ge - gs;
		fl |= NCCLBPF_PROF_F_GPU_TIMED;
	}
	c->xfer_bytes = atomic_load_explicit(&e->xfer, memory_order_relaxed);
	/* A task completes after all its started channels stopped (each holds a unit of it), so the
	 * channels it started are the channels that completed: no count kept per channel stop. */
	c->n_children = e->kind == K_TASK ? (int32_t)atomic_load_explicit(&e->kch_started, memory_order_relaxed)
	                                  : atomic_load_explicit(&e->nchild, memory_order_relaxed);
	c->is_send = e->id.is_send;
	c->event = (uint32_t)hook;
	c->flags = fl & 0xff;
	c->abi_version = (uint32_t)pc->version;
	c->reserved = 0;
	c->user_tag = e->id.user_tag;
	c->kernel_variant = e->id.variant;
	c->is_sym_coll = e->id.sym;
	c->phase_id = e->id.phase;
	c->reserved2 = 0;
}
_Static_assert(sizeof(struct ncclbpf_prof_ctx) == 152, "fill_ctx writes all 28 fields of the 152 bytes");

static inline __attribute__((always_inline)) void maybe_run(struct pctx *pc, struct pev *e, int hook) {
	if (hook <= 0 || !slot_set(hook)) return;
	struct ncclbpf_prof_ctx c;
	fill_ctx(pc, e, hook, &c);
	run_hook(hook, &c);
}

/* child_done hands a completed child's times to its parent and drops the child's units there; t is
 * complete's (the time the child completed, if read). */
static void child_done(struct pctx *pc, struct pev *e, uint32_t units, uint64_t t) {
	struct pev *p = e->parent;
	if (!p) return;
	uint32_t pgen = e->parent_gen;
	amax(&p->end_ns, atomic_load_explicit(&e->end_ns, memory_order_relaxed));
	uint64_t gs = atomic_load_explicit(&e->gpu_start, memory_order_relaxed);
	uint64_t ge = atomic_load_explicit(&e->gpu_end, memory_order_relaxed);
	if (gs != UINT64_MAX && ge != 0) {
		amin(&p->gpu_start, gs);
		amax(&p->gpu_end, ge);
	}
	if (e->kind == K_STEP) atomic_fetch_add_explicit(&p->xfer, atomic_load(&e->xfer), memory_order_relaxed);
	/* a proxy op counts its steps (a task's channels are counted at their start) */
	if (e->kind == K_STEP && (p->needs & NCCLBPF_PROF_NEED_CHILDREN))
		atomic_fetch_add_explicit(&p->nchild, 1, memory_order_relaxed);
	if (release(p, pgen, units)) complete(pc, p, pgen, t);
}

/* lat_tag_index is the tag index of user tag t (not 0) in pc's latency keys: 1 + its slot in
 * pc->lat_tags, claiming the first free slot for a new tag, or NBP_LAT_TAG_OTHER once all are taken.
 * Slots are claimed in order and never freed, so two threads that meet a new tag at once end in the
 * same slot. Only tagged tasks come here. */
__attribute__((noinline)) static uint32_t lat_tag_index(struct pctx *pc, uint64_t t) {
	for (uint32_t i = 0; i < NCCLBPF_LAT_TAGS; i++) {
		uint64_t c = atomic_load_explicit(&pc->lat_tags[i], memory_order_acquire);
		if (c == 0) {
			uint64_t z = 0;
			c = atomic_compare_exchange_strong_explicit(&pc->lat_tags[i], &z, t, memory_order_acq_rel, memory_order_acquire) ? t : z;
		}
		if (c == t) return i + 1;
	}
	return NBP_LAT_TAG_OTHER;
}

/* lat_claim takes a free histogram entry for key, a compare-and-swap on its key word; a key with a
 * user tag of its own also takes one of the NCCLBPF_LAT_TAGGED_N tagged entries, or none: then the
 * task goes to the tag "other". Returns the key the entry holds now (key: claimed). */
static uint64_t lat_claim(struct pctx *pc, struct lat_ent *l, uint64_t key) {
	uint32_t ti = (uint32_t)(key >> NBP_LAT_TAG_SHIFT) & 0xff;
	int tagged = ti != 0 && ti != NBP_LAT_TAG_OTHER;
	if (tagged && atomic_fetch_add_explicit(&pc->lat_tagged, 1, memory_order_relaxed) >= NCCLBPF_LAT_TAGGED_N) {
		atomic_fetch_sub_explicit(&pc->lat_tagged, 1, memory_order_relaxed);
		return 0;
	}
	uint64_t zero = 0;
	if (atomic_compare_exchange_strong_explicit(&l->key, &zero, key, memory_order_acq_rel, memory_order_acquire)) return key;
	if (tagged) atomic_fetch_sub_explicit(&pc->lat_tagged, 1, memory_order_relaxed);
	return zero;
}

/* lat_count adds one latency (bucket li, ns) to key's histogram: its entry, found or claimed within 8
 * probes. Returns 0 if there is none. Entries are never freed: a key is in the first free entry of
 * its probe sequence, so a probe that meets a free entry it cannot claim for key can stop. */
static inline int lat_count(struct pctx *pc, uint64_t key, uint32_t li, uint64_t ns) {
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 57); /* 7 bits: NCCLBPF_LAT_TAB_N */
	for (uint32_t i = 0; i < 8; i++) {
		struct lat_ent *l = &pc->lat[(h + i) & (NCCLBPF_LAT_TAB_N - 1)];
		uint64_t k = atomic_load_explicit(&l->key, memory_order_acquire);
		if (k == 0 && (k = lat_claim(pc, l, key)) == 0) return 0;
		if (k != key) continue;
		atomic_fetch_add_explicit(&l->b[li], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&l->sum_ns, ns, memory_order_relaxed);
		return 1;
	}
	return 0;
}

/* lat_miss counts a task whose key found no entry: a tagged one under the tag "other", else (or if
 * that finds none either) in the context's overflow. */
__attribute__((noinline)) static void lat_miss(struct pctx *pc, uint64_t key, uint32_t li, uint64_t ns) {
	uint64_t other = (key & ~(0xffull << NBP_LAT_TAG_SHIFT)) | (uint64_t)NBP_LAT_TAG_OTHER << NBP_LAT_TAG_SHIFT;
	if (((key >> NBP_LAT_TAG_SHIFT) & 0xff) != 0 && key != other && lat_count(pc, other, li, ns)) return;
	atomic_fetch_add_explicit(&pc->lat_overflow, 1, memory_order_relaxed);
}

/* lat_add counts a completed collective task in its context's latency histograms: the GPU span when
 * NCCL gave GPU timestamps, else the host span (ncclbpf_prof_latency_ns's choice). An untagged task
 * pays one test for the tag. */
static void lat_add(struct pctx *pc, struct pev *e) {
	if (!pc->lat) return;
	uint64_t end = atomic_load_explicit(&e->end_ns, memory_order_relaxed), start = e->start_ns ? e->start_ns : end;
	uint64_t ns = end > start ? end - start : 0;
	uint64_t gs = atomic_load_explicit(&e->gpu_start, memory_order_relaxed);
	uint64_t ge = atomic_load_explicit(&e->gpu_end, memory_order_relaxed);
	if (gs != UINT64_MAX && ge != 0 && ge >= gs) ns = ge - gs;
	uint64_t key = 1ull << 63 | (uint64_t)(uint8_t)e->id.func | (uint64_t)ncclbpf_size_bucket(e->id.bytes) << 8 |
	               (uint64_t)(uint8_t)(e->id.algo + 1) << 16 | (uint64_t)(uint8_t)(e->id.proto + 1) << 24;
	if (__builtin_expect(e->id.user_tag != 0, 0)) key |= (uint64_t)lat_tag_index(pc, e->id.user_tag) << NBP_LAT_TAG_SHIFT;
	uint32_t li = ns <= (1ull << NCCLBPF_LAT_MIN_LOG2) ? 0 : 64 - (uint32_t)__builtin_clzll(ns - 1) - NCCLBPF_LAT_MIN_LOG2;
	if (li >= NCCLBPF_LAT_BUCKETS) li = NCCLBPF_LAT_BUCKETS - 1;
	if (!lat_count(pc, key, li, ns)) lat_miss(pc, key, li, ns);
}

/* An event ends when its last unit is released: its own stop or its last child's. The end time is
 * read then, once, and only for an event whose hook reads it (a child's stop reads no clock for the
 * parent's sake); the stop of a task that needs it also records its own time, the end of a task the
 * sweep completes. */
static void complete(struct pctx *pc, struct pev *e, uint32_t gen, uint64_t t) {
	(void)gen;
	if (t != NBP_NO_CLOCK && (e->needs & NCCLBPF_PROF_NEED_END) && e->kind != K_KCH) {
		if (!t) t = nb_mono_ns();
		amax(&e->end_ns, t);
	}
	if (t == NBP_NO_CLOCK) t = 0;
	switch (e->kind) {
	case K_TASK:
		/* the latency histograms take timed collectives (NCCLBPF_LATENCY, or a program that reads
		 * both times) */
		if (e->id.hook == NCCLBPF_PROF_COLL_END && (e->needs & NBP_NEED_TIMED) == NBP_NEED_TIMED) lat_add(pc, e);
		maybe_run(pc, e, (int)e->id.hook);
		break;
	case K_KCH:
		maybe_run(pc, e, NCCLBPF_PROF_KERNEL_CH_END);
		child_done(pc, e, 1u + e->within, t);
		break;
	case K_PROXY_OP:
		maybe_run(pc, e, NCCLBPF_PROF_PROXY_OP_END);
		child_done(pc, e, 1, t);
		break;
	case K_STEP:
		child_done(pc, e, 1, t);
		break;
	case K_PHASE:
		maybe_run(pc, e, NCCLBPF_PROF_KERNEL_PHASE_END);
		child_done(pc, e, 1, t);
		break;
	default:
		return;
	}
	ev_free(pc, e);
}

/* ------------------------------------------------------------------------------------------------
 * Descriptor decoding */

/* NCCL passes its names as pointers to static strings: decoded names are cached by address in a
 * small direct-mapped table (one 64-bit word per entry: address << 16 | kind << 8 | value + 1), so
 * that the string compares run once per distinct string. Lock-free: a torn race only costs a miss. */
enum { SC_FUNC = 1, SC_ALGO, SC_PROTO, SC_TYPE };
static _Atomic uint64_t g_strcache[256];

static inline int sc_get(const char *s, int kind, int32_t *v) {
	uintptr_t u = (uintptr_t)s;
	uint64_t e = atomic_load_explicit(&g_strcache[(u >> 3) & 255], memory_order_relaxed);
	if ((e >> 16) != (uint64_t)u || ((e >> 8) & 0xff) != (uint64_t)kind) return 0;
	*v = (int32_t)(e & 0xff) - 1;
	return 1;
}

static inline void sc_put(const char *s, int kind, int32_t v) {
	uintptr_t u = (uintptr_t)s;
	if ((uint64_t)u >> 47 || v < -1 || v > 254) return;
	atomic_store_explicit(&g_strcache[(u >> 3) & 255], (uint64_t)u << 16 | (uint64_t)kind << 8 | (uint64_t)(v + 1),
	                      memory_order_relaxed);
}

#define CACHED(KIND, FN)                                   \
	static inline int32_t FN##_c(const char *s) {          \
		int32_t v;                                         \
		if (!s) return FN(s);                              \
		if (sc_get(s, KIND, &v)) return v;                 \
		v = FN(s);                                         \
		sc_put(s, KIND, v);                                \
		return v;                                          \
	}

__attribute__((noinline)) static int32_t func_id(const char *s) {
	if (!s) return NCCLBPF_PROF_FUNC_UNKNOWN;
	switch (s[0]) {
	case 'A':
		if (!strcmp(s, "AllReduce")) return 4;
		if (!strcmp(s, "AllGather")) return 2;
		if (!strcmp(s, "AlltoAll")) return 8;
		if (!strcmp(s, "AllGatherV")) return 11;
		break;
	case 'B':
		if (!strcmp(s, "Broadcast")) return 0;
		break;
	case 'R':
		if (!strcmp(s, "ReduceScatter")) return 3;
		if (!strcmp(s, "Reduce")) return 1;
		if (!strcmp(s, "Recv")) return 7;
		break;
	case 'S':
		if (!strcmp(s, "Send")) return 6;
		if (!strcmp(s, "SendRecv")) return 5;
		if (!strcmp(s, "Scatter")) return 9;
		break;
	case 'G':
		if (!strcmp(s, "Gather")) return 10;
		break;
	}
	return NCCLBPF_PROF_FUNC_UNKNOWN;
}

__attribute__((noinline)) static int32_t algo_id(const char *s) {
	if (!s) return -1;
	if (!strcmp(s, "RING")) return 1;
	if (!strcmp(s, "TREE")) return 0;
	if (!strcmp(s, "NVLS")) return 4;
	if (!strcmp(s, "NVLS_TREE")) return 5;
	if (!strcmp(s, "PAT")) return 6;
	if (!strcmp(s, "COLLNET_DIRECT")) return 2;
	if (!strcmp(s, "COLLNET_CHAIN")) return 3;
	return -1;
}

__attribute__((noinline)) static int32_t proto_id(const char *s) {
	if (!s) return -1;
	if (!strcmp(s, "SIMPLE")) return 2;
	if (!strcmp(s, "LL")) return 0;
	if (!strcmp(s, "LL128")) return 1;
	return -1;
}

/* type_size parses NCCL's datatype strings ("ncclFloat32", ...). "Unknown" is what NCCL prints for
 * ncclUint8 (its string table has no case for it), hence 1. Returns 0 if unknown. */
static uint32_t type_size(const char *s) {
	if (!s) return 0;
	if (!strcmp(s, "Unknown")) return 1;
	if (strncmp(s, "nccl", 4) != 0) return 0;
	const char *t = s + 4;
	size_t n = strlen(t);
	if (n < 4) return 0;
	if (!strncmp(t, "Float8", 6)) return 1;
	const char *d = t + n - 2;
	if (d[0] == '1' && d[1] == '6') return 2;
	if (d[0] == '3' && d[1] == '2') return 4;
	if (d[0] == '6' && d[1] == '4') return 8;
	if (d[1] == '8') return 1;
	return 0;
}

__attribute__((noinline)) static int32_t type_size_i(const char *s) { return (int32_t)type_size(s); }

/* variant_hash: FNV-1a of a v7 kernel variant name, as ncclbpf_prof_variant_hash in the policy
 * header; 0 for none. */
__attribute__((noinline)) static int32_t variant_hash(const char *s) {
	if (!s || !*s) return 0;
	uint32_t h = 2166136261u;
	for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
	return (int32_t)(h ? h : 1);
}
/* Not cached: the string cache holds 8-bit values. Names are short, and only v7 collectives pay. */
#define variant_hash_c(s) ((uint32_t)variant_hash(s))
CACHED(SC_FUNC, func_id)
CACHED(SC_ALGO, algo_id)
CACHED(SC_PROTO, proto_id)
CACHED(SC_TYPE, type_size_i)

static const uint8_t v1_type_size[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

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

/* dview_init sets every member (no memset: see fill_ctx). */
static inline void dview_init(struct dview *v, uint64_t type, void *parent, int rank) {
	v->type = type;
	v->parent = parent;
	v->rank = rank;
	v->id.seq = v->id.bytes = 0;
	v->id.func = v->id.algo = v->id.proto = v->id.nchannels = v->id.peer = v->id.channel = v->id.rank = v->id.is_send = 0;
	v->id.hook = 0;
	v->id.variant = v->id.sym = 0;
	v->id.phase = -1;
	v->id.user_tag = 0;
	v->nch = 0;
	v->ptimer = 0;
	v->pid = 0;
	v->has_pid = 0;
}

static void task_common(struct pctx *pc, struct dview *v) {
	v->id.rank = v->rank;
	v->id.peer = -1;
	v->id.channel = -1;
	v->id.is_send = -1;
	(void)pc;
}

/* ------------------------------------------------------------------------------------------------
 * The event entry points, version-neutral */

/* parent_wants: whether the child v describes (a kernel channel or proxy operation without a program
 * of its own) matters to its parent task: one that waits for its channels, or whose program reads its
 * completion time, GPU span or children. A peek without a reference; NULL or stale parents: no. */
static int parent_wants(struct pctx *pc, const struct dview *v) {
	uint32_t tag;
	if (!v->parent || (v->has_pid && v->pid != pc->pid)) return 0;
	struct pev *p = from_handle(pc, v->parent, &tag);
	if (!p) return 0;
	uint64_t s = atomic_load_explicit(&p->st, memory_order_acquire);
	if (PEND(s) == 0 || ((s >> 32) & NBP_TAG_MASK) != tag || p->kind != K_TASK) return 0;
	return p->expected != 0 || (p->needs & NBP_NEED_COMPLETION) != 0;
}

static void start_common(struct pctx *pc, void **eHandle, struct dview *v) {
	*eHandle = NULL;
	uint32_t gen, tag, pgen;
	struct pev *e, *p;
	switch (v->type) {
	case NBP_EV_COLL:
	case NBP_EV_P2P: {
		maintain(pc);
		e = ev_alloc(pc, K_TASK, &gen);
		if (!e) return;
		e->id = v->id;
		uint32_t needs = task_needs((int)v->id.hook);
		e->needs = (uint8_t)needs;
		e->start_ns = needs & NCCLBPF_PROF_NEED_START ? nb_mono_ns() : 0;
		/* Expect kernel channels only when NCCL sends them (v3+ and KernelCh in the mask) and
		 * something needs them: the task's program or histograms (completion time, GPU span,
		 * channel count), or children's programs that need the task as their parent. A task that
		 * waits for none ends at its stop (NCCLBPF_PROF_F_HOST_ONLY when it had channels). */
		int mask = 0;
		int *mp = atomic_load_explicit(&g_mask_ptr, memory_order_relaxed);
		if (mp) mask = __atomic_load_n(mp, __ATOMIC_RELAXED);
		int absent = atomic_load_explicit(&pc->kch_absent, memory_order_relaxed);
		int deps = (needs & NBP_NEED_COMPLETION) || children_need_parents(pc->version);
		int wait = pc->version >= 3 && (mask & NBP_EV_KERNEL_CH) && !absent && deps;
		e->expected = wait ? v->nch : 0;
		if (e->expected) {
			e->stamp_ns = nb_coarse_ns();
			if (!atomic_load_explicit(&pc->waits, memory_order_relaxed)) atomic_store(&pc->waits, 1);
		}
		if (pc->version <= 2 || (!wait && v->nch))
			atomic_store_explicit(&e->flags, NCCLBPF_PROF_F_HOST_ONLY, memory_order_relaxed);
		/* A task that waits for no channel, whose program reads nothing its children bring and
		 * whose children have no program needing it as parent is solo: acquire gives no child a
		 * reference on it (a child that starts after a reload published such a program is an
		 * orphan), so its state word has two writers only, this start and its stop, which NCCL
		 * orders (it hands the handle from one to the other, on one thread or two): the stop
		 * releases it with a plain store, no compare-and-swap. Written before publish_live's
		 * release, read by acquire after its load of the state word. */
		e->solo = !deps; /* (and so expects no channel) */
		publish_live(e, gen, 1 + e->expected);
		*eHandle = handle_of(e, gen);
		return;
	}
	case NBP_EV_KERNEL_CH:
	case NBP_EV_PROXY_OP: {
		int kch = v->type == NBP_EV_KERNEL_CH;
		if (kch && !atomic_load_explicit(&pc->kch_seen, memory_order_relaxed)) {
			atomic_store(&pc->kch_seen, 1);
			atomic_store(&pc->kch_absent, 0);
		}
		int own = kch ? NCCLBPF_PROF_KERNEL_CH_END : NCCLBPF_PROF_PROXY_OP_END;
		uint32_t needs = hook_needs(own);
		/* Without a program of its own, a child matters only to a parent that waits for it or
		 * reads what it brings: otherwise it is not kept (*eHandle stays NULL, NCCL then sends
		 * nothing more for it). Checked without a reference: a parent that ends meanwhile is
		 * found gone below. */
		if (!slot_set(own) && !parent_wants(pc, v)) return;
		if (kch && !slot_set(own)) {
			/* No kernel_ch_end program: the channel is kept in its task, without an event of its
			 * own. Its handle is the task's, marked: it holds one reference on the task (so the
			 * task stays, and its generation with it) until its stop, and its GPU stamps go
			 * straight to the task. */
			p = from_handle(pc, v->parent, &tag);
			if (!p || !acquire(p, tag, &pgen)) return;
			if (p->kind != K_TASK) {
				if (release(p, pgen, 1)) complete(pc, p, pgen, 0);
				return;
			}
			int within = atomic_fetch_add_explicit(&p->kch_started, 1, memory_order_relaxed) < p->expected;
			if (v->ptimer) amin(&p->gpu_start, v->ptimer);
			*eHandle = (void *)((uintptr_t)p | (pgen & NBP_TAG_MASK) | NBP_H_LIGHT | (within ? NBP_H_WITHIN : 0));
			return;
		}
		e = ev_alloc(pc, kch ? K_KCH : K_PROXY_OP, &gen);
		if (!e) return;
		e->needs = (uint8_t)needs;
		/* A child's start time is only seen by its own hook: no clock read unless it reads it. */
		e->start_ns = needs & NCCLBPF_PROF_NEED_START ? nb_mono_ns() : 0;
		p = NULL;
		if (v->parent && (!v->has_pid || v->pid == pc->pid)) {
			p = from_handle(pc, v->parent, &tag);
			if (p && acquire(p, tag, &pgen)) {
				if (p->kind != K_TASK) {
					release(p, pgen, 1);
					p = NULL;
				}
			} else
				p = NULL;
		}
		if (p) {
			e->parent = p;
			e->parent_gen = pgen;
			e->id = p->id;
			if (kch) e->within = atomic_fetch_add(&p->kch_started, 1) < p->expected;
		} else {
			memset(&e->id, 0, sizeof(e->id));
			e->id.func = e->id.algo = e->id.proto = e->id.phase = -1;
			e->id.rank = v->rank;
			atomic_store_explicit(&e->flags, NCCLBPF_PROF_F_ORPHAN, memory_order_relaxed);
			atomic_fetch_add_explicit(&pc->orphans, 1, memory_order_relaxed);
		}
		e->id.channel = v->id.channel;
		if (kch) {
			e->id.peer = p ? e->id.peer : -1;
			e->id.is_send = -1;
			if (v->ptimer) atomic_store_explicit(&e->gpu_start, v->ptimer, memory_order_relaxed);
		} else {
			e->id.peer = v->id.peer;
			e->id.is_send = v->id.is_send;
			if (v->rank) e->id.rank = v->rank;
		}
		publish_live(e, gen, 1);
		*eHandle = handle_of(e, gen);
		return;
	}
	case NBP_EV_KERNEL_PHASE: {
		/* Only for a kernel_phase_end program (the mask asks for none otherwise). The parent is a
		 * kernel channel: its own event (a kernel_ch_end program is loaded) or, kept in its task,
		 * the task's handle marked light. The phase holds one reference on that parent until its
		 * stop; its identity is the collective's, with its channel and phase. */
		if (!slot_set(NCCLBPF_PROF_KERNEL_PHASE_END)) return;
		p = NULL;
		uintptr_t u = (uintptr_t)v->parent;
		struct pev *q = (struct pev *)(u & ~NBP_H_BITS);
		if (u && q >= pc->pool && q < pc->pool + pc->n && acquire(q, (uint32_t)(u & NBP_TAG_MASK), &pgen)) {
			if (q->kind == ((u & NBP_H_LIGHT) ? K_TASK : K_KCH))
				p = q;
			else if (release(q, pgen, 1))
				complete(pc, q, pgen, 0);
		}
		e = ev_alloc(pc, K_PHASE, &gen);
		if (!e) {
			if (p && release(p, pgen, 1)) complete(pc, p, pgen, 0);
			return;
		}
		uint32_t needs = hook_needs(NCCLBPF_PROF_KERNEL_PHASE_END);
		e->needs = (uint8_t)needs;
		e->start_ns = needs & NCCLBPF_PROF_NEED_START ? nb_mono_ns() : 0;
		if (p) {
			e->parent = p;
			e->parent_gen = pgen;
			e->id = p->id;
		} else {
			memset(&e->id, 0, sizeof(e->id));
			e->id.func = e->id.algo = e->id.proto = -1;
			e->id.rank = v->rank;
			atomic_store_explicit(&e->flags, NCCLBPF_PROF_F_ORPHAN, memory_order_relaxed);
			atomic_fetch_add_explicit(&pc->orphans, 1, memory_order_relaxed);
		}
		e->id.channel = v->id.channel;
		e->id.phase = v->id.phase;
		e->id.peer = -1;
		e->id.is_send = -1;
		if (v->ptimer) atomic_store_explicit(&e->gpu_start, v->ptimer, memory_order_relaxed);
		publish_live(e, gen, 1);
		*eHandle = handle_of(e, gen);
		return;
	}
	case NBP_EV_PROXY_STEP: {
		if (!v->parent) return;
		p = from_handle(pc, v->parent, &tag);
		if (!p || !acquire(p, tag, &pgen)) return;
		if (p->kind != K_PROXY_OP) {
			if (release(p, pgen, 1)) complete(pc, p, pgen, 0);
			return;
		}
		e = ev_alloc(pc, K_STEP, &gen);
		if (!e) {
			if (release(p, pgen, 1)) complete(pc, p, pgen, 0);
			return;
		}
		e->parent = p;
		e->parent_gen = pgen;
		e->start_ns = 0; /* steps have no hook: their times only extend the proxy op */
		publish_live(e, gen, 1);
		*eHandle = handle_of(e, gen);
		return;
	}
	default:
		return; /* groups, API events, proxy control, net plugin, CE: not kept */
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

static nbp_result_t stop_event(void *handle) {
	TRACE("stop %p\n", handle);
	uint32_t gen;
	struct pev *e = handle_event(handle, &gen);
	if (!e) return NBP_SUCCESS;
	if ((uintptr_t)handle & NBP_H_LIGHT) { /* a kernel channel kept in its task e */
		if (release(e, gen, (uintptr_t)handle & NBP_H_WITHIN ? 2 : 1)) complete(e->pc, e, gen, 0);
		return NBP_SUCCESS;
	}
	/* The stop's time is the end of an event without children. A task that waits for its kernel
	 * channels ends at its last channel's stop, where complete reads the clock: its own stop time
	 * is only read while the context has seen no channel (the sweep may then complete it as
	 * host-only, ending at its stop). A task the sweep completes as forced ends at the last time
	 * read for it. */
	uint64_t t = 0;
	if ((e->needs & NCCLBPF_PROF_NEED_END) &&
	    (e->kind != K_TASK || !e->expected || !atomic_load_explicit(&e->pc->kch_seen, memory_order_relaxed))) {
		t = nb_mono_ns();
		amax(&e->end_ns, t);
	}
	if (e->kind == K_TASK) {
		struct pctx *pc = e->pc;
		if (e->expected && !atomic_load_explicit(&pc->kch_seen, memory_order_relaxed) &&
		    !atomic_load_explicit(&pc->first_wait_ns, memory_order_relaxed)) {
			uint64_t z = 0;
			atomic_compare_exchange_strong(&pc->first_wait_ns, &z, nb_coarse_ns());
		}
	}
	if (e->solo) { /* pending is 1, this stop's: no locked instruction */
		atomic_store_explicit(&e->st, (uint64_t)gen << 32, memory_order_relaxed);
		complete(e->pc, e, gen, t);
	} else if (release_mark(e, gen, 1, e->kind == K_TASK ? ST_STOPPED : 0))
		complete(e->pc, e, gen, t);
	return NBP_SUCCESS;
}

static void record_common(void *handle, nbp_state_t st, uint64_t arg, int has_arg) {
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

/* ------------------------------------------------------------------------------------------------
 * Contexts */

static uint32_t env_u32(const char *name, uint32_t def, uint32_t lo, uint32_t hi) {
	const char *s = getenv(name);
	if (!s || !*s) return def;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi) return def;
	return (uint32_t)v;
}

/* The policy load (loader.h), weak: the profiler shim is also built on its own, without it
 * (tests), and then loads nothing. A failed load under NCCLBPF_STRICT fails the profiler's init. */
extern void ncclbpf_ensure_loaded(void) __attribute__((weak));
extern void ncclbpf_report_load(nb_loader_log_t log) __attribute__((weak));
extern int ncclbpf_strict_failed(void) __attribute__((weak));

static nbp_result_t init_common(void **context, int version, uint64_t comm_id, int *mask, int nranks, int rank,
                                nbp_logger_t log) {
	if (!context) return NBP_INTERNAL_ERROR;
	*context = NULL;
	if (ncclbpf_ensure_loaded) ncclbpf_ensure_loaded();
	if (log && ncclbpf_report_load) ncclbpf_report_load((nb_loader_log_t)log);
	if (ncclbpf_strict_failed && ncclbpf_strict_failed()) return NBP_INTERNAL_ERROR;
	struct pctx *pc = calloc(1, sizeof(*pc));
	if (!pc) return NBP_INTERNAL_ERROR;
	pc->version = version;
	pc->serial = atomic_fetch_add(&g_ctx_serial, 1) + 1;
	pc->comm_id = comm_id;
	pc->nranks = nranks;
	pc->rank = rank;
	pc->pid = getpid();
	pc->log = log;
	pc->n = env_u32("NCCLBPF_PROF_POOL", 4096, 16, 1u << 22);
	pc->reclaim_ns = (uint64_t)env_u32("NCCLBPF_PROF_RECLAIM_MS", 1000, 1, 3600000) * 1000000ull;
	pc->kch_wait_ns = (uint64_t)env_u32("NCCLBPF_PROF_KCH_WAIT_MS", 5000, 1, 3600000) * 1000000ull;
	/* NCCL creates no kernel-channel events on a 1-rank communicator (seen with 2.28.9: send/recv
	 * to self gives P2p events only): do not wait for them there. */
	if (nranks == 1) atomic_store(&pc->kch_absent, 1);
	pc->pool = aligned_alloc(NBP_EV_ALIGN, sizeof(struct pev) * pc->n);
	if (!pc->pool) {
		free(pc);
		return NBP_INTERNAL_ERROR;
	}
	memset(pc->pool, 0, sizeof(struct pev) * pc->n);
	pc->lat = aligned_alloc(NBP_ALIGN, sizeof(struct lat_ent) * NCCLBPF_LAT_TAB_N);
	if (pc->lat) memset(pc->lat, 0, sizeof(struct lat_ent) * NCCLBPF_LAT_TAB_N); /* none: no histograms */
	for (uint32_t i = 0; i < pc->n; i++) atomic_store_explicit(&pc->pool[i].next, i + 1 < pc->n ? i + 2 : 0, memory_order_relaxed);
	atomic_store(&pc->head, 1);

	pthread_mutex_lock(&g_reg_lock);
	pc->next_ctx = g_ctxs;
	g_ctxs = pc;
	pthread_mutex_unlock(&g_reg_lock);

	atomic_store(&g_version, version);
	if (mask) {
		atomic_store(&g_mask_ptr, mask);
		ncclbpf_prof_refresh_mask();
	}
	char msg[160];
	snprintf(msg, sizeof msg, "ncclbpf profiler v%d: context for comm %#llx rank %d/%d, pool %u events, event mask %#x",
	         version, (unsigned long long)comm_id, rank, nranks, pc->n, atomic_load(&g_mask_stored));
	logmsg(pc, NBP_LOG_INFO, msg);
	*context = pc;
	return NBP_SUCCESS;
}

static nbp_result_t finalize_common(void *context) {
	struct pctx *pc = context;
	if (!pc) return NBP_SUCCESS;
	pthread_mutex_lock(&g_reg_lock);
	for (struct pctx **pp = &g_ctxs; *pp; pp = &(*pp)->next_ctx)
		if (*pp == pc) {
			*pp = pc->next_ctx;
			break;
		}
	g_done_dropped += atomic_load(&pc->dropped);
	g_done_forced += atomic_load(&pc->forced);
	g_done_orphans += atomic_load(&pc->orphans);
	pthread_mutex_unlock(&g_reg_lock);
	free(pc->pool);
	free(pc->lat);
	free(pc);
	return NBP_SUCCESS;
}

/* ------------------------------------------------------------------------------------------------
 * Per-version adapters */

/* v2 to v6 name the same members at other offsets: one adapter body, instantiated per layout. COLL_NCH
 * is the collective's channel member (nMaxChannels before v4), P2P_NCH a p2p task's channel count (0
 * before v4, which do not say), and kch_view_NAME fills a kernel-channel event's view (0: the version
 * has no such events). */
#define START_ADAPTER(NAME, DESCR, COLL_NCH, P2P_NCH, COLL_V7, P2P_V7)                                                 \
	static nbp_result_t NAME(void *context, void **eHandle, DESCR *d) {                                 \
		struct pctx *pc = context;                                                                      \
		if (!eHandle) return NBP_SUCCESS;                                                               \
		*eHandle = NULL;                                                                                \
		if (!pc || !d) return NBP_SUCCESS;                                                              \
		TRACE("start type %#llx parent %p rank %d\n", (unsigned long long)d->type, d->parentObj, d->rank); \
		struct dview v;                                                                                 \
		dview_init(&v, d->type, d->parentObj, d->rank);                                                 \
		switch ((uint64_t)d->type) { /* v2..v4 have an 8-bit type */                                  \
		case NBP_EV_COLL:                                                                               \
			v.id.hook = NCCLBPF_PROF_COLL_END;                                                          \
			v.id.seq = d->coll.seqNumber;                                                               \
			v.id.func = func_id_c(d->coll.func);                                                        \
			v.id.bytes = (uint64_t)d->coll.count * (uint32_t)type_size_i_c(d->coll.datatype);           \
			v.id.algo = algo_id_c(d->coll.algo);                                                        \
			v.id.proto = proto_id_c(d->coll.proto);                                                     \
			v.id.nchannels = v.nch = d->coll.COLL_NCH;                                                  \
			task_common(pc, &v);                                                                        \
			COLL_V7;                                                                                    \
			break;                                                                                      \
		case NBP_EV_P2P:                                                                                \
			v.id.hook = NCCLBPF_PROF_P2P_END;                                                           \
			v.id.func = func_id_c(d->p2p.func);                                                         \
			v.id.bytes = (uint64_t)d->p2p.count * (uint32_t)type_size_i_c(d->p2p.datatype);             \
			v.id.algo = v.id.proto = -1;                                                                \
			v.id.nchannels = v.nch = P2P_NCH;                                                           \
			task_common(pc, &v);                                                                        \
			v.id.peer = d->p2p.peer;                                                                    \
			P2P_V7;                                                                                     \
			break;                                                                                      \
		case NBP_EV_KERNEL_CH:                                                                          \
			if (!kch_view_##NAME(&v, d)) return NBP_SUCCESS;                                            \
			break;                                                                                      \
		case NBP_EV_KERNEL_PHASE:                                                                       \
			if (!phase_view_##NAME(&v, d)) return NBP_SUCCESS;                                          \
			break;                                                                                      \
		case NBP_EV_PROXY_OP:                                                                           \
			v.id.channel = d->proxyOp.channelId;                                                        \
			v.id.peer = d->proxyOp.peer;                                                                \
			v.id.is_send = d->proxyOp.isSend;                                                           \
			v.pid = d->proxyOp.pid;                                                                     \
			v.has_pid = 1;                                                                              \
			break;                                                                                      \
		case NBP_EV_PROXY_STEP:                                                                         \
			break;                                                                                      \
		default:                                                                                        \
			return NBP_SUCCESS;                                                                         \
		}                                                                                               \
		start_common(pc, eHandle, &v);                                                                  \
		return NBP_SUCCESS;                                                                             \
	}

static inline int kch_view_start_v56(struct dview *v, nbp_descr_v6_t *d) {
	v->id.channel = d->kernelCh.channelId;
	v->ptimer = d->kernelCh.pTimer;
	return 1;
}
static inline int kch_view_start_v4(struct dview *v, nbp_descr_v4_t *d) {
	v->id.channel = d->kernelCh.channelId;
	v->ptimer = d->kernelCh.pTimer;
	return 1;
}
static inline int kch_view_start_v3(struct dview *v, nbp_descr_v3_t *d) {
	v->id.channel = d->kernelCh.channelId;
	return 1;
}
static inline int kch_view_start_v2(struct dview *v, nbp_descr_v2_t *d) {
	(void)v;
	(void)d;
	return 0;
}
static inline int kch_view_start_v7(struct dview *v, nbp_descr_v7_t *d) {
	v->id.channel = d->kernelCh.channelId;
	v->ptimer = d->kernelCh.pTimer;
	return 1;
}
/* A kernel-phase event's view (v7 only; earlier versions have none: 0). */
static inline int phase_view_start_v7(struct dview *v, nbp_descr_v7_t *d) {
	v->id.channel = d->kernelPhase.channelId;
	v->id.phase = d->kernelPhase.phaseId;
	v->ptimer = d->kernelPhase.pTimer;
	return 1;
}
#define NO_PHASES(NAME, DESCR) \
	static inline int phase_view_##NAME(struct dview *v, DESCR *d) { return (void)v, (void)d, 0; }
NO_PHASES(start_v56, nbp_descr_v6_t)
NO_PHASES(start_v4, nbp_descr_v4_t)
NO_PHASES(start_v3, nbp_descr_v3_t)
NO_PHASES(start_v2, nbp_descr_v2_t)
/* v7's coll and p2p: the user tag, kernel variant and symmetric-kernel flag. A kernel-phase event
 * (NBP_EV_KERNEL_PHASE) is asked for only for a kernel_phase_end program; one that comes without it
 * gets a NULL handle. */
#define V7_COLL(v, d)                                                                                   \
	do {                                                                                            \
		(v).id.user_tag = (d)->coll.userTag;                                                            \
		(v).id.variant = variant_hash_c((d)->coll.kernelVariant);                                       \
		(v).id.sym = (d)->coll.isSymColl ? 1 : 0;                                                       \
	} while (0)
#define V7_P2P(v, d) ((v).id.user_tag = (d)->p2p.userTag)
START_ADAPTER(start_v7, nbp_descr_v7_t, nChannels, d->p2p.nChannels, V7_COLL(v, d), V7_P2P(v, d))
START_ADAPTER(start_v56, nbp_descr_v6_t, nChannels, d->p2p.nChannels, (void)0, (void)0)
START_ADAPTER(start_v4, nbp_descr_v4_t, nChannels, d->p2p.nChannels, (void)0, (void)0)
START_ADAPTER(start_v3, nbp_descr_v3_t, nMaxChannels, 0, (void)0, (void)0)
START_ADAPTER(start_v2, nbp_descr_v2_t, nMaxChannels, 0, (void)0, (void)0)

static nbp_result_t start_v1(void *context, void **eHandle, nbp_descr_v1_t *d) {
	struct pctx *pc = context;
	if (!eHandle) return NBP_SUCCESS;
	*eHandle = NULL;
	if (!pc || !d) return NBP_SUCCESS;
	struct dview v;
	dview_init(&v, d->type, d->parentObj, d->rank);
	switch (d->type) {
	case NBP_EV_COLL:
		v.id.hook = NCCLBPF_PROF_COLL_END;
		v.id.seq = d->coll.seqNumber;
		v.id.func = d->coll.func;
		v.id.bytes = (uint64_t)d->coll.count * (d->coll.datatype < 12 ? v1_type_size[d->coll.datatype] : 0);
		v.id.algo = d->coll.algo;
		v.id.proto = d->coll.proto;
		v.id.nchannels = v.nch = d->coll.nMaxChannels;
		task_common(pc, &v);
		break;
	case NBP_EV_P2P:
		v.id.hook = NCCLBPF_PROF_P2P_END;
		v.id.func = d->p2p.func;
		v.id.bytes = (uint64_t)d->p2p.count * (d->p2p.datatype < 12 ? v1_type_size[d->p2p.datatype] : 0);
		v.id.algo = v.id.proto = -1;
		task_common(pc, &v);
		v.id.peer = d->p2p.peer;
		break;
	case NBP_EV_PROXY_OP:
		v.id.channel = d->proxyOp.channelId;
		v.id.peer = d->proxyOp.peer;
		v.id.is_send = d->proxyOp.isSend;
		v.pid = d->proxyOp.pid;
		v.has_pid = 1;
		break;
	case NBP_EV_PROXY_STEP:
		break;
	default:
		return NBP_SUCCESS;
	}
	start_common(pc, eHandle, &v);
	return NBP_SUCCESS;
}

static nbp_result_t record_v46(void *h, nbp_state_t st, nbp_state_args_v6_t *a) {
	if (!a) {
		record_common(h, st, 0, 0);
		return NBP_SUCCESS;
	}
	uint64_t arg = st == NBP_ST_KERNEL_CH_STOP || st == NBP_ST_KERNEL_PHASE_STOP ? a->kernelCh.pTimer
	                                                                          : (uint64_t)a->proxyStep.transSize;
	record_common(h, st, arg, 1);
	return NBP_SUCCESS;
}

static nbp_result_t record_v13(void *h, nbp_state_t st, nbp_state_args_v3_t *a) {
	record_common(h, st, a ? (uint64_t)a->proxyOp.transSize : 0, a != NULL);
	return NBP_SUCCESS;
}

static nbp_result_t init_v56_common(int version, void **context, uint64_t commId, int *mask, int nranks, int rank,
                                    nbp_logger_t logfn) {
	return init_common(context, version, commId, mask, nranks, rank, logfn);
}
static nbp_result_t init_v7(void **c, uint64_t id, int *m, const char *name, int nNodes, int nranks, int rank,
                           nbp_logger_t l) {
	(void)name, (void)nNodes;
	return init_v56_common(7, c, id, m, nranks, rank, l);
}
static nbp_result_t init_v6(void **c, uint64_t id, int *m, const char *name, int nNodes, int nranks, int rank,
                            nbp_logger_t l) {
	(void)name, (void)nNodes;
	return init_v56_common(6, c, id, m, nranks, rank, l);
}
static nbp_result_t init_v5(void **c, uint64_t id, int *m, const char *name, int nNodes, int nranks, int rank,
                            nbp_logger_t l) {
	(void)name, (void)nNodes;
	return init_v56_common(5, c, id, m, nranks, rank, l);
}
static nbp_result_t init_v4(void **c, int *m, const char *name, uint64_t hash, int nNodes, int nranks, int rank,
                            nbp_logger_t l) {
	(void)name, (void)nNodes;
	return init_common(c, 4, hash, m, nranks, rank, l);
}
static nbp_result_t init_v3(void **c, int *m) { return init_common(c, 3, 0, m, 0, 0, NULL); }
static nbp_result_t init_v2(void **c, int *m) { return init_common(c, 2, 0, m, 0, 0, NULL); }
static nbp_result_t init_v1(void **c, int *m) { return init_common(c, 1, 0, m, 0, 0, NULL); }

#define NBP_EXPORT __attribute__((visibility("default")))

NBP_EXPORT const nbp_profiler_v7_t ncclProfiler_v7 = {"ncclbpf", init_v7, start_v7, stop_event, record_v46, finalize_common};
NBP_EXPORT const nbp_profiler_v6_t ncclProfiler_v6 = {"ncclbpf", init_v6, start_v56, stop_event, record_v46, finalize_common};
NBP_EXPORT const nbp_profiler_v5_t ncclProfiler_v5 = {"ncclbpf", init_v5, start_v56, stop_event, record_v46, finalize_common};
NBP_EXPORT const nbp_profiler_v4_t ncclProfiler_v4 = {"ncclbpf", init_v4, start_v4, stop_event, record_v46, finalize_common};
NBP_EXPORT const nbp_profiler_v3_t ncclProfiler_v3 = {"ncclbpf", init_v3, start_v3, stop_event, record_v13, finalize_common};
NBP_EXPORT const nbp_profiler_v2_t ncclProfiler_v2 = {"ncclbpf", init_v2, start_v2, stop_event, record_v13, finalize_common};
NBP_EXPORT const nbp_profiler_v1_t ncclProfiler_v1 = {"ncclbpf", init_v1, start_v1, stop_event, record_v13, finalize_common};

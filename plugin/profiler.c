/* SPDX-License-Identifier: MIT */
/*
 * profiler.c: the profiler side of libncclbpf.so: its design, and the control plane's side of it
 * (slots, activation mask, contexts, counters, the latency histograms' read-out). The events live in
 * profiler_events.c, NCCL's profiler ABI versions in profiler_abi.c, what they share in
 * profiler_core.h.
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
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "profiler_core.h"
#include "grace.h"
#include "loader.h"

struct slot nbp_slots[NCCLBPF_PROF_LAST_HOOK + 1];
int *_Atomic nbp_mask_ptr;
_Atomic int nbp_lat_on = -1;
#ifdef NBP_TRACE
_Atomic int nbp_trace_n;
#endif
static _Atomic uint64_t g_ctx_serial;
static _Atomic int g_version;
static _Atomic int g_mask_stored;

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pctx *g_ctxs;
static uint64_t g_done_dropped, g_done_forced, g_done_orphans;

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
	atomic_store_explicit(&nbp_slots[hook].needs, fn ? needs & NCCLBPF_PROF_NEED_ALL : 0, memory_order_relaxed);
	return atomic_exchange_explicit(&nbp_slots[hook].fn, fn, memory_order_acq_rel);
}

uintptr_t ncclbpf_prof_publish(int hook, uintptr_t fn) { return ncclbpf_prof_publish_needs(hook, fn, NCCLBPF_PROF_NEED_ALL); }

uintptr_t ncclbpf_prof_publish_record(int hook, const struct nb_published *r) {
	return ncclbpf_prof_publish_needs(hook, r ? r->entry : 0, r ? r->fill : 0);
}

uint32_t ncclbpf_prof_needs(int hook) {
	if (hook < NCCLBPF_PROF_FIRST_HOOK || hook > NCCLBPF_PROF_LAST_HOOK) return 0;
	return atomic_load(&nbp_slots[hook].fn) ? atomic_load(&nbp_slots[hook].needs) : 0;
}

/* The profiler's threads as readers of grace.h. */
static _Atomic uint64_t *thr_next(void *it) {
	int *i = it;
	for (; *i < NBP_MAX_THREADS; ++*i)
		if (atomic_load_explicit(&nbp_thr[*i].used, memory_order_acquire)) return &nbp_thr[(*i)++].active;
	return NULL;
}

int ncclbpf_prof_synchronize(void) {
	if (nb_grace_fence() != 0) return -1;
	int i = 0;
	nb_grace_wait_all(thr_next, &i);
	while (atomic_load(&nbp_overflow_inflight) != 0) sched_yield();
	return 0;
}

/* nbp_lat_read_env reads NCCLBPF_LATENCY once (lat_enabled's slow path). */
int nbp_lat_read_env(void) {
	const char *s = getenv("NCCLBPF_LATENCY");
	int e = s && (!strcmp(s, "1") || !strcasecmp(s, "on") || !strcasecmp(s, "yes") || !strcasecmp(s, "true"));
	atomic_store(&nbp_lat_on, e);
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
	int *p = atomic_load(&nbp_mask_ptr);
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
		out->calls[i] = atomic_load_explicit(&nbp_overflow_calls[i], memory_order_relaxed);
		for (int t = 0; t < NBP_MAX_THREADS; t++) out->calls[i] += atomic_load_explicit(&nbp_thr[t].calls[i], memory_order_relaxed);
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

nbp_result_t init_common(void **context, int version, uint64_t comm_id, int *mask, int nranks, int rank,
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
		atomic_store(&nbp_mask_ptr, mask);
		ncclbpf_prof_refresh_mask();
	}
	char msg[160];
	snprintf(msg, sizeof msg, "ncclbpf profiler v%d: context for comm %#llx rank %d/%d, pool %u events, event mask %#x",
	         version, (unsigned long long)comm_id, rank, nranks, pc->n, atomic_load(&g_mask_stored));
	logmsg(pc, NBP_LOG_INFO, msg);
	*context = pc;
	return NBP_SUCCESS;
}

nbp_result_t finalize_common(void *context) {
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

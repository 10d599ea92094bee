/* SPDX-License-Identifier: MIT */
/*
 * profiler_events.c: the profiler's events, on NCCL's threads (see profiler.c for the design): the
 * per-context pool, the version-neutral start, stop and record that the ABI adapters (profiler_abi.c)
 * call, completion (programs run, results handed to parents) and the latency histograms' counting.
 * No lock, no allocation, no Go.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "profiler_core.h"
#include "clock.h"

struct thr nbp_thr[NBP_MAX_THREADS];
_Atomic uint64_t nbp_overflow_inflight;
_Atomic uint64_t nbp_overflow_calls[NCCLBPF_PROF_LAST_HOOK + 1];
static __thread struct thr *t_rec __attribute__((tls_model("initial-exec")));
static __thread int t_rec_none __attribute__((tls_model("initial-exec")));

static struct thr *claim_thr(void) {
	if (t_rec_none) return NULL;
	for (int i = 0; i < NBP_MAX_THREADS; i++) {
		int z = 0;
		if (atomic_load_explicit(&nbp_thr[i].used, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&nbp_thr[i].used, &z, 1))
			return t_rec = &nbp_thr[i];
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
		uintptr_t f = atomic_load_explicit(&nbp_slots[hook].fn, memory_order_acquire);
		if (f) {
			(void)((nbp_prog_fn)f)(c);
			atomic_store_explicit(&r->calls[hook], atomic_load_explicit(&r->calls[hook], memory_order_relaxed) + 1,
			                      memory_order_relaxed);
		}
		atomic_store_explicit(&r->active, a + 2, memory_order_release);
		return;
	}
	atomic_fetch_add(&nbp_overflow_inflight, 1);
	uintptr_t f = atomic_load(&nbp_slots[hook].fn);
	if (f) {
		(void)((nbp_prog_fn)f)(c);
		atomic_fetch_add_explicit(&nbp_overflow_calls[hook], 1, memory_order_relaxed);
	}
	atomic_fetch_sub(&nbp_overflow_inflight, 1);
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
	if (atomic_load_explicit(&nbp_slots[hook].needs, memory_order_relaxed) & NCCLBPF_PROF_NEED_SEQ)
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

void start_common(struct pctx *pc, void **eHandle, struct dview *v) {
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
		int *mp = atomic_load_explicit(&nbp_mask_ptr, memory_order_relaxed);
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

nbp_result_t stop_event(void *handle) {
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

/* SPDX-License-Identifier: MIT */
/*
 * net.c: the net side of libncclbpf.so, a watching wrapper around the job's own net plugin.
 *
 * NCCL finds ncclNetPlugin_v12, _v11 or _v10 here, or, NCCL 2.21 to 2.26, _v9 or _v8 (NCCL_NET_PLUGIN
 * names this library): those tables and their per-version entry points are net_exports.c's. Every
 * call goes to the plugin that really moves the bytes, named by NCCLBPF_NET_PLUGIN, with the
 * caller's arguments (its load, init and the calls passed on unchanged: net_inner.c; its older ABIs
 * seen as v10: net_abi.c). This file is the watching: the hook slots, the connection and request
 * tables, the data path (isend, irecv, test, close) and the statistics.
 *
 * Watching costs the data path (isend, irecv, test) no lock, no allocation and no Go:
 *
 *  - a request is recorded in a fixed-size open-addressing table keyed by the inner request pointer,
 *    one per calling thread: isend/irecv claim a free entry of their thread's table with plain stores;
 *    test, once the inner test reported the request done, finds it (in its own thread's table first)
 *    and frees it with one store ("Requests" below); a test of a request not done yet costs nothing;
 *  - connections (send and receive comms) are recorded in a second table written by listen/connect/
 *    accept/close (under a mutex: not the data path) and read without a lock;
 *  - times are cycle counter readings converted with a factor calibrated when the library loads;
 *  - programs run through one slot per hook with the grace-period protocol of the profiler's slots:
 *    an odd/even word per connection (its record; the owner thread writes it with plain stores);
 *  - a completion fills only the context fields its program reads (the verifier lists them).
 *
 * Environment: NCCLBPF_NET_REQUESTS (entries of each thread's request table, a power of two, default
 * 16384; read once, at the first init); the inner plugin's, NCCLBPF_NET_PLUGIN, is net_inner.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "net_internal.h"
#include "clock.h"
#include "grace.h"

#define NBN_PROBE 16
#define NBN_CONN_N 4096 /* connections live at once (NCCL: a few per peer and channel) */

typedef uint64_t (*nbn_prog_fn)(void *ctx);

/* ------------------------------------------------------------------------------------------------
 * Slots and connection records (the profiler's grace-period protocol, profiler.c). */

/* struct nbn_slot: net_internal.h. */
#define NBN_FILL(w) ((uint32_t)(w) & 0xff)
#define NBN_READS(w) ((uint32_t)((w) >> 8) & 0xff)
#define NBN_GEN1 ((uint64_t)1 << 16)

/* A record of calls into published code, for grace periods, with counters. Every connection has
 * one: NCCL drives a net comm from one thread at a time (set-up on the proxy's service thread, then
 * data on its progress thread), so the owner writes the record with plain stores, the protocol of
 * the tuner's per-communicator word (slot.c). Events without a connection record (the connection
 * table was full) use g_shared, with read-modify-writes. seq[h] counts the runs of hook h's program
 * (they are the statistics' calls too). One cache line: a completion writes nothing else of the
 * connection. */
struct nbn_rec {
	_Alignas(64) _Atomic uint64_t active; /* odd while running a program */
	_Atomic uint64_t seq[NCCLBPF_NET_LAST_HOOK + 1];
	_Atomic uint64_t sends, recvs;
	_Atomic uint64_t untracked;
};

struct nbn_slot g_nbn_slots[NCCLBPF_NET_LAST_HOOK + 1];
static struct nbn_rec g_shared;
static _Atomic uint64_t g_shared_inflight;
static _Atomic uint64_t g_conns;
_Atomic int g_nbn_outer_version;

/* bump adds n to counter v of record r; shared: r is g_shared (read-modify-write), else the
 * record's owner thread calls (plain load and store). */
static inline void bump(int shared, _Atomic uint64_t *v, uint64_t n) {
	if (__builtin_expect(shared, 0))
		atomic_fetch_add_explicit(v, n, memory_order_relaxed);
	else
		atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + n, memory_order_relaxed);
}

int ncclbpf_net_hook_id(const char *name) {
	static const char *names[] = {NULL, "net/conn", "net/send_end", "net/recv_end"};
	if (!name) return -1;
	for (int i = NCCLBPF_NET_FIRST_HOOK; i <= NCCLBPF_NET_LAST_HOOK; i++)
		if (strcmp(name, names[i]) == 0) return i;
	return -1;
}

uintptr_t ncclbpf_net_publish(int hook, const struct nb_published *r) {
	if (hook < NCCLBPF_NET_FIRST_HOOK || hook > NCCLBPF_NET_LAST_HOOK) return 0;
	struct nbn_slot *s = &g_nbn_slots[hook];
	uintptr_t fn = r ? r->entry : 0;
	uint32_t reads = fn ? r->fill & 0xff : 0;
	uint64_t w = atomic_load(&s->word), nw;
	do /* generation odd, reads, fill widened */
		nw = (((w >> 16) | 1) << 16) | (uint64_t)reads << 8 | NBN_FILL(w) | reads;
	while (!atomic_compare_exchange_weak(&s->word, &w, nw));
	if (fn) nb_grace_before_publish();
	uintptr_t old = atomic_exchange_explicit(&s->fn, fn, memory_order_acq_rel);
	atomic_fetch_add(&s->word, NBN_GEN1); /* even again: this publish is complete */
	return old;
}

static void conn_wait_all(void); /* below: waits for every connection record's word */

int ncclbpf_net_synchronize(void) {
	uint64_t w0[NCCLBPF_NET_LAST_HOOK + 1];
	for (int h = NCCLBPF_NET_FIRST_HOOK; h <= NCCLBPF_NET_LAST_HOOK; h++) w0[h] = atomic_load(&g_nbn_slots[h].word);
	if (nb_grace_fence() != 0) return -1;
	conn_wait_all();
	while (atomic_load(&g_shared_inflight) != 0) sched_yield();
	/* Every run that may have loaded a program older than the one published at w0 is over: fill
	 * what that one reads, unless a publish was under way at w0 or came since (the word changed). */
	for (int h = NCCLBPF_NET_FIRST_HOOK; h <= NCCLBPF_NET_LAST_HOOK; h++) {
		uint64_t w = w0[h];
		if (!((w >> 16) & 1) && NBN_FILL(w) != NBN_READS(w))
			atomic_compare_exchange_strong(&g_nbn_slots[h].word, &w, (w & ~(uint64_t)0xff) | NBN_READS(w));
	}
	return 0;
}

/* enter/leave bracket a call into published code on record r (the grace period's word). */
static inline uint64_t enter(struct nbn_rec *r, int shared) {
	uint64_t a = 0;
	if (__builtin_expect(shared, 0)) {
		atomic_fetch_add_explicit(&g_shared_inflight, 1, memory_order_relaxed);
	} else {
		a = atomic_load_explicit(&r->active, memory_order_relaxed);
		atomic_store_explicit(&r->active, a + 1, memory_order_relaxed);
	}
	atomic_signal_fence(memory_order_seq_cst); /* membarrier provides the hardware fence */
	return a;
}
static inline void leave(struct nbn_rec *r, int shared, uint64_t a) {
	if (__builtin_expect(shared, 0))
		atomic_fetch_sub_explicit(&g_shared_inflight, 1, memory_order_release);
	else
		atomic_store_explicit(&r->active, a + 2, memory_order_release);
}

/* ------------------------------------------------------------------------------------------------
 * Connections. */

struct nbn_conn {
	struct nbn_rec rec;
	/* set before the key is published, read-only afterwards */
	uint64_t comm_id, peer_key, conn_id;
	int32_t dev, kind;
};
static struct nbn_conn g_conn[NBN_CONN_N];
/* the keys apart from the records: a lookup that misses reads one or two cache lines */
static _Atomic(uintptr_t) g_conn_key[NBN_CONN_N]; /* the inner comm pointer; 0 free */
static _Atomic uint32_t g_conn_span;              /* probes a lookup needs (farthest from home + 1) */
static pthread_mutex_t g_conn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nbn_rec g_retired; /* counters of closed connections, under g_conn_lock */

/* The connection records as readers of grace.h (under g_conn_lock). */
static _Atomic uint64_t *conn_next(void *it) {
	int *i = it;
	for (; *i < NBN_CONN_N; ++*i)
		if (atomic_load_explicit(&g_conn_key[*i], memory_order_acquire)) return &g_conn[(*i)++].rec.active;
	return NULL;
}

static void conn_wait_all(void) {
	pthread_mutex_lock(&g_conn_lock);
	int i = 0;
	nb_grace_wait_all(conn_next, &i);
	pthread_mutex_unlock(&g_conn_lock);
}

static void rec_add(struct nbn_rec *to, struct nbn_rec *from) {
#define A(f) atomic_store_explicit(&to->f, atomic_load_explicit(&to->f, memory_order_relaxed) + atomic_load_explicit(&from->f, memory_order_relaxed), memory_order_relaxed)
	for (int h = 0; h <= NCCLBPF_NET_LAST_HOOK; h++) {
		A(seq[h]);
	}
	A(sends);
	A(recvs);
	A(untracked);
#undef A
}

/* Fibonacci hashing: the top bits of the pointer times 2^64/phi. Pointers of one pool (fixed
 * strides) spread evenly; one multiply on the data path. */
static inline size_t fib_hash(uintptr_t k, unsigned shift) {
	return (size_t)(((uint64_t)k * 0x9e3779b97f4a7c15ull) >> shift);
}
#define NBN_CONN_SHIFT (64 - 12) /* log2(NBN_CONN_N) */
_Static_assert(NBN_CONN_N == 1 << 12, "NBN_CONN_SHIFT");

static uint64_t hash_handle(const void *h) {
	const unsigned char *p = h;
	uint64_t x = 0xcbf29ce484222325ull; /* FNV-1a over the handle's bytes */
	for (int i = 0; i < NBN_HANDLE_MAXSIZE; i++) x = (x ^ p[i]) * 0x100000001b3ull;
	return x;
}

static inline struct nbn_conn *conn_find(void *comm) {
	uintptr_t k = (uintptr_t)comm;
	size_t i = fib_hash(k, NBN_CONN_SHIFT);
	uint32_t span = atomic_load_explicit(&g_conn_span, memory_order_relaxed);
	for (uint32_t p = 0; p < span; p++, i = (i + 1) & (NBN_CONN_N - 1))
		if (atomic_load_explicit(&g_conn_key[i], memory_order_acquire) == k) return &g_conn[i];
	return NULL;
}

/* conn_add records comm (control path). Returns the record, or NULL when the window is full. */
static struct nbn_conn *conn_add(void *comm, uint64_t comm_id, uint64_t peer_key, int dev, int kind) {
	uintptr_t k = (uintptr_t)comm;
	struct nbn_conn *c = NULL;
	pthread_mutex_lock(&g_conn_lock);
	size_t i = fib_hash(k, NBN_CONN_SHIFT);
	for (uint32_t p = 0; p < NBN_PROBE; p++, i = (i + 1) & (NBN_CONN_N - 1)) {
		if (atomic_load_explicit(&g_conn_key[i], memory_order_relaxed) == 0) {
			c = &g_conn[i];
			memset(&c->rec, 0, sizeof c->rec);
			c->comm_id = comm_id;
			c->peer_key = peer_key;
			c->conn_id = atomic_fetch_add(&g_conns, 1) + 1;
			c->dev = dev;
			c->kind = kind;
			if (p + 1 > atomic_load_explicit(&g_conn_span, memory_order_relaxed))
				atomic_store_explicit(&g_conn_span, p + 1, memory_order_relaxed);
			atomic_store_explicit(&g_conn_key[i], k, memory_order_release);
			break;
		}
	}
	if (!c) atomic_fetch_add(&g_conns, 1);
	pthread_mutex_unlock(&g_conn_lock);
	return c;
}

static void conn_del(void *comm) {
	pthread_mutex_lock(&g_conn_lock);
	struct nbn_conn *c = conn_find(comm);
	if (c) {
		rec_add(&g_retired, &c->rec);
		atomic_store_explicit(&g_conn_key[c - g_conn], 0, memory_order_release);
	}
	pthread_mutex_unlock(&g_conn_lock);
}

static void conn_event(struct nbn_conn *c, int dev, int kind, uint64_t comm_id, uint64_t peer_key) {
	if (!atomic_load_explicit(&g_nbn_slots[NCCLBPF_NET_CONN].fn, memory_order_relaxed)) return;
	struct nbn_rec *r = c ? &c->rec : &g_shared;
	struct ncclbpf_net_ctx ctx = {0};
	ctx.comm_id = c ? c->comm_id : comm_id;
	ctx.peer_key = c ? c->peer_key : peer_key;
	ctx.conn_id = c ? c->conn_id : 0;
	ctx.end_ns = nb_ticks_ns(nb_ticks());
	ctx.tag = -1;
	ctx.dev = dev;
	ctx.kind = kind;
	ctx.event = NCCLBPF_NET_CONN;
	ctx.abi_version = (uint32_t)atomic_load_explicit(&g_nbn_outer_version, memory_order_relaxed);
	uint64_t a = enter(r, !c);
	uintptr_t fn = atomic_load_explicit(&g_nbn_slots[NCCLBPF_NET_CONN].fn, memory_order_acquire);
	if (fn) {
		ctx.local_seq = atomic_load_explicit(&r->seq[NCCLBPF_NET_CONN], memory_order_relaxed);
		bump(!c, &r->seq[NCCLBPF_NET_CONN], 1);
		((nbn_prog_fn)fn)(&ctx);
	}
	leave(r, !c, a);
}

/* ------------------------------------------------------------------------------------------------
 * Requests.
 *
 * One table (lane) per calling thread, so that recording a request takes plain stores: a thread claims
 * a lane at its first watched isend/irecv (no allocation: the lanes are made by the first init; a
 * thread that has exited leaves its lane to the next one) and is the only one that ever turns a free
 * entry of it into a used one. Any thread may free an entry (the one whose test completes it): it
 * stores 0 into a key it found, which the owner does not touch until it reads 0 (acquire), so the two
 * never write an entry at once. Threads beyond NBN_LANES alive at once share the last lane, where
 * entries are claimed with a compare-and-swap. test looks a request up only once the inner test
 * reported it done, in its own thread's lane first (NCCL tests a request on the thread that posted
 * it), then in the others. (Were a request tested on another thread than the one that posted it, and
 * its pointer handed by the inner plugin to a third thread's isend in between, the two entries could
 * be matched the wrong way round: each is still counted once.) Each lane keeps its span: the farthest
 * an entry ever landed from its home + 1, so a lookup probes that many entries (usually 1) and a lane
 * never used costs nothing. An entry is one cache line: requests of different threads never share one. */

#define NBN_LANES 32 /* threads alive at once with a lane of their own; more share lane NBN_LANES */

struct nbn_req {
	_Alignas(64) _Atomic(uintptr_t) key; /* the inner request pointer; 0 free */
	uint64_t start;                       /* ticks at isend/irecv; 0 not timed */
	uint64_t posted;
	struct nbn_conn *conn;
	int32_t tag, n, is_send;
};
static struct nbn_req *g_req;   /* NBN_LANES + 1 lanes of g_req_n entries */
static size_t g_req_n;
static unsigned g_req_shift;    /* 64 - log2(g_req_n) */
static _Atomic uint32_t g_span[NBN_LANES + 1];
static _Atomic uint32_t g_lanes; /* lanes handed out (at most NBN_LANES) */
static _Atomic int g_lane_tid[NBN_LANES]; /* the thread (id) that owns each lane; 0 being handed out */
static _Atomic uint32_t g_shared_threads; /* threads that record in the shared lane */
/* the calling thread's lane: tab NULL until its first watched request */
struct nbn_me {
	struct nbn_req *tab;
	_Atomic uint32_t *span;
	int lane;
};
static __thread struct nbn_me t_me __attribute__((tls_model("initial-exec")));

/* claim_lane gives the calling thread a lane (once per thread, at its first watched request): a
 * fresh one, else one whose thread has exited (it keeps that thread's entries, which any thread may
 * still find and free), else the shared one. */
static __attribute__((noinline, cold)) int claim_lane(void) {
	int tid = (int)syscall(SYS_gettid);
	uint32_t n = atomic_load(&g_lanes);
	while (n < NBN_LANES)
		if (atomic_compare_exchange_weak(&g_lanes, &n, n + 1)) {
			atomic_store(&g_lane_tid[n], tid);
			return (int)n;
		}
	pid_t pid = getpid();
	for (int l = 0; l < NBN_LANES; l++) {
		int o = atomic_load(&g_lane_tid[l]);
		if (o == 0) continue;
		/* o == tid: the thread that had this id has exited, since we have it now */
		if (o != tid && !(syscall(SYS_tgkill, pid, o, 0) == -1 && errno == ESRCH)) continue;
		if (atomic_compare_exchange_strong(&g_lane_tid[l], &o, tid)) return l;
	}
	atomic_fetch_add(&g_shared_threads, 1);
	return NBN_LANES;
}

static inline struct nbn_me *my_lane(void) {
	struct nbn_me *me = &t_me;
	if (__builtin_expect(me->tab == NULL, 0)) {
		int l = claim_lane();
		me->lane = l;
		me->span = &g_span[l];
		me->tab = g_req + (size_t)l * g_req_n;
	}
	return me;
}

static inline void span_raise(int lane, uint32_t want) {
	uint32_t s = atomic_load_explicit(&g_span[lane], memory_order_relaxed);
	while (s < want && !atomic_compare_exchange_weak_explicit(&g_span[lane], &s, want, memory_order_relaxed,
	                                                            memory_order_relaxed)) {
	}
}

/* req_add records req (posted on c, NULL when the connection is unknown); false when its lane has no
 * free entry within NBN_PROBE of its home (the request then completes unwatched, counted). */
static inline int req_add(void *req, struct nbn_conn *c, uint64_t posted, int tag, int n, int is_send,
                          uint64_t start) {
	uintptr_t k = (uintptr_t)req;
	struct nbn_me *me = my_lane();
	int lane = me->lane;
	struct nbn_req *t = me->tab;
	size_t mask = g_req_n - 1, i = fib_hash(k, g_req_shift);
	for (uint32_t p = 0; p < NBN_PROBE; p++, i = (i + 1) & mask) {
		struct nbn_req *e = &t[i];
		if (atomic_load_explicit(&e->key, memory_order_acquire) != 0) continue;
		if (__builtin_expect(lane == NBN_LANES, 0)) {
			uintptr_t z = 0;
			if (!atomic_compare_exchange_strong_explicit(&e->key, &z, k, memory_order_acquire,
			                                             memory_order_relaxed))
				continue;
		}
		e->start = start;
		e->posted = posted;
		e->conn = c;
		e->tag = tag;
		e->n = n;
		e->is_send = is_send;
		if (p >= atomic_load_explicit(me->span, memory_order_relaxed)) span_raise(lane, p + 1);
		if (__builtin_expect(lane != NBN_LANES, 1)) atomic_store_explicit(&e->key, k, memory_order_release);
		return 1;
	}
	return 0;
}

static inline struct nbn_req *probe(struct nbn_req *t, _Atomic uint32_t *spanp, uintptr_t k, size_t home) {
	uint32_t span = atomic_load_explicit(spanp, memory_order_relaxed);
	size_t mask = g_req_n - 1, i = home;
	for (uint32_t p = 0; p < span; p++, i = (i + 1) & mask)
		if (atomic_load_explicit(&t[i].key, memory_order_relaxed) == k) return &t[i];
	return NULL;
}

/* req_find_others looks for req in every lane but own (not the data path's usual case: a request
 * that was never recorded, or tested on another thread than the one that posted it). */
static __attribute__((noinline)) struct nbn_req *req_find_others(uintptr_t k, size_t home, int own) {
	uint32_t n = atomic_load_explicit(&g_lanes, memory_order_relaxed);
	for (int l = 0; l < (int)n; l++) {
		if (l == own) continue;
		struct nbn_req *e = probe(g_req + (size_t)l * g_req_n, &g_span[l], k, home);
		if (e) return e;
	}
	return own == NBN_LANES ? NULL : probe(g_req + NBN_LANES * g_req_n, &g_span[NBN_LANES], k, home);
}

static inline struct nbn_req *req_find(void *req) {
	uintptr_t k = (uintptr_t)req;
	size_t home = fib_hash(k, g_req_shift);
	struct nbn_me *me = &t_me;
	int own = -1;
	if (__builtin_expect(me->tab != NULL, 1)) {
		struct nbn_req *e = probe(me->tab, me->span, k, home);
		if (__builtin_expect(e != NULL, 1)) return e;
		own = me->lane;
	}
	/* no other lane (the usual case of a request never recorded: no program, or posted before it);
	 * the shared lane is used only once every other lane was handed out */
	uint32_t n = atomic_load_explicit(&g_lanes, memory_order_relaxed);
	if (n == 0 || (n == 1 && own == 0)) return NULL;
	return req_find_others(k, home, own);
}

/* The clock's calibration (5 ms) and the request tables are made by the first net init, not when
 * the library loads: a job that uses only the tuner or profiler pays for neither. */
static pthread_once_t g_first_init_once = PTHREAD_ONCE_INIT;
static int g_table_ok;
static size_t g_table_n;
static void first_init(void) {
	nb_ticks_calibrate();
	size_t reqs = 16384;
	const char *rq = getenv("NCCLBPF_NET_REQUESTS");
	if (rq && *rq) {
		char *end;
		unsigned long v = strtoul(rq, &end, 10);
		if (*end == 0 && v >= 64 && v <= (1ul << 20) && (v & (v - 1)) == 0) reqs = v;
	}
	g_table_n = reqs;
	/* zero pages, mapped lazily: a lane costs memory only once its thread records requests */
	size_t bytes = (NBN_LANES + 1) * reqs * sizeof(struct nbn_req);
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) return;
	g_req_n = reqs;
	g_req_shift = 64 - (unsigned)__builtin_ctzl(reqs);
	g_req = m;
	g_table_ok = 1;
}

int nbn_requests_ready(int *tables, size_t *entries) {
	pthread_once(&g_first_init_once, first_init);
	*tables = NBN_LANES + 1;
	*entries = g_table_n;
	return g_table_ok;
}

/* ------------------------------------------------------------------------------------------------
 * Set-up: connections recorded, net/conn's program run. */

nbn_result_t nbn_listen(void *ictx, uint64_t comm_id, int dev, void *handle, void **listenComm) {
	nbn_result_t rc = g_nbn_in_version >= 11
	                      ? ((nbn_listen_v11_t)g_nbn_in.v11.listen_)(ictx, dev, handle, listenComm)
	                      : ((nbn_listen_v10_t)g_nbn_in.v10.listen_)(dev, handle, listenComm);
	if (rc == NBN_SUCCESS && *listenComm) {
		uint64_t key = hash_handle(handle);
		struct nbn_conn *c = conn_add(*listenComm, comm_id, key, dev, NCCLBPF_NET_KIND_LISTEN);
		conn_event(c, dev, NCCLBPF_NET_KIND_LISTEN, comm_id, key);
	}
	return rc;
}
nbn_result_t nbn_connect(void *ictx, struct nbn_comm_config *cfg, uint64_t comm_id, int dev, void *handle,
                         void **sendComm, struct nbn_dev_handle **sendDevComm) {
	nbn_result_t rc = g_nbn_in_version >= 11
	                      ? ((nbn_connect_v11_t)g_nbn_in.v11.connect_)(ictx, dev, handle, sendComm, sendDevComm)
	                      : ((nbn_connect_v10_t)g_nbn_in.v10.connect_)(dev, cfg, handle, sendComm, sendDevComm);
	if (rc == NBN_SUCCESS && *sendComm) {
		uint64_t key = hash_handle(handle);
		struct nbn_conn *c = conn_add(*sendComm, comm_id, key, dev, NCCLBPF_NET_KIND_CONNECT);
		conn_event(c, dev, NCCLBPF_NET_KIND_CONNECT, comm_id, key);
	}
	return rc;
}
nbn_result_t w_accept(void *listenComm, void **recvComm, struct nbn_dev_handle **recvDevComm) {
	nbn_result_t rc = g_nbn_in.v10.accept(listenComm, recvComm, recvDevComm);
	if (rc == NBN_SUCCESS && *recvComm) {
		struct nbn_conn *l = conn_find(listenComm);
		uint64_t comm_id = l ? l->comm_id : 0, key = l ? l->peer_key : 0;
		int dev = l ? l->dev : -1;
		struct nbn_conn *c = conn_add(*recvComm, comm_id, key, dev, NCCLBPF_NET_KIND_ACCEPT);
		conn_event(c, dev, NCCLBPF_NET_KIND_ACCEPT, comm_id, key);
	}
	return rc;
}

/* ------------------------------------------------------------------------------------------------
 * The data path. */

/* isend and irecv without a program, and when to record a request: net_internal.h (nbn_watching). */

/* start_ticks is the request's start: the cycle counter when hook's program reads times, 0 (not
 * timed) otherwise. */
static inline uint64_t start_ticks(int hook) {
	return (atomic_load_explicit(&g_nbn_slots[hook].word, memory_order_relaxed) & NCCLBPF_NET_R_TIMES) ? nb_ticks()
	                                                                                                : 0;
}

static inline __attribute__((always_inline)) void record(void *req, void *comm, uint64_t posted, int tag, int n, int is_send, int hook) {
	struct nbn_conn *c = conn_find(comm);
	if (__builtin_expect(!req_add(req, c, posted, tag, n, is_send, start_ticks(hook)), 0)) {
		struct nbn_rec *r = c ? &c->rec : &g_shared;
		bump(!c, &r->untracked, 1);
	}
}

__attribute__((noinline)) nbn_result_t w_isend_watched(void *sendComm, void *data, size_t size, int tag,
                                                       void *mhandle, void *phandle, void **request) {
	nbn_result_t rc = g_nbn_in.v10.isend(sendComm, data, size, tag, mhandle, phandle, request);
	if (rc == NBN_SUCCESS && *request) record(*request, sendComm, size, tag, 1, 1, NCCLBPF_NET_SEND_END);
	return rc;
}

__attribute__((noinline)) nbn_result_t w_irecv_watched(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                                                       void **mhandles, void **phandles, void **request) {
	nbn_result_t rc = g_nbn_in.v10.irecv(recvComm, n, data, sizes, tags, mhandles, phandles, request);
	if (rc == NBN_SUCCESS && *request) {
		uint64_t posted = 0;
		for (int i = 0; i < n; i++) posted += sizes ? sizes[i] : 0;
		record(*request, recvComm, posted, (n > 0 && tags) ? tags[0] : -1, n, 0, NCCLBPF_NET_RECV_END);
	}
	return rc;
}

/* complete counts the finished request e (test returned rc, sizes) and runs its hook's program with
 * the context fields that program reads (the slot's fill mask), then frees e. c is e's connection;
 * without one (the connection table was full), shared = 1 and the counters are g_shared's. */
static inline __attribute__((always_inline)) void complete_on(struct nbn_req *e, nbn_result_t rc, const int *sizes,
                                                             struct nbn_conn *c, const int shared) {
	struct nbn_rec *r = shared ? &g_shared : &c->rec;
	int is_send = e->is_send, hook = is_send ? NCCLBPF_NET_SEND_END : NCCLBPF_NET_RECV_END;
	bump(shared, is_send ? &r->sends : &r->recvs, 1);
	uint64_t a = enter(r, shared);
	uintptr_t fn = atomic_load_explicit(&g_nbn_slots[hook].fn, memory_order_acquire);
	if (__builtin_expect(fn != 0, 1)) {
		/* loaded inside the bracket, after fn: at least what fn reads (ncclbpf_net_publish) */
		uint32_t fill = NBN_FILL(atomic_load_explicit(&g_nbn_slots[hook].word, memory_order_relaxed));
		struct ncclbpf_net_ctx ctx; /* fields outside fill: never read (the verifier proves it) */
		uint32_t flags = rc == NBN_SUCCESS ? 0 : NCCLBPF_NET_F_ERROR;
		if (fill & NCCLBPF_NET_R_IDS) {
			ctx.comm_id = shared ? 0 : c->comm_id;
			ctx.peer_key = shared ? 0 : c->peer_key;
			ctx.conn_id = shared ? 0 : c->conn_id;
			ctx.dev = shared ? -1 : c->dev;
		}
		if (fill & (NCCLBPF_NET_R_BYTES | NCCLBPF_NET_R_FLAGS)) { /* bytes, and whether they are known */
			uint64_t bytes = e->posted;
			if (rc == NBN_SUCCESS && sizes) {
				/* n is 1 but for grouped receives. A plugin that never writes sizes (some do not)
				 * leaves what the caller had there: a negative size, or more than was posted, is
				 * no size at all. */
				uint64_t sum = 0;
				int unsized = 0;
				for (int i = 0; i < e->n; i++) {
					unsized |= sizes[i] < 0;
					sum += (uint64_t)(uint32_t)sizes[i];
				}
				if (unsized || sum > e->posted)
					flags |= NCCLBPF_NET_F_UNSIZED;
				else
					bytes = sum;
			}
			ctx.bytes = bytes;
		}
		if (fill & NCCLBPF_NET_R_POSTED) ctx.posted_bytes = e->posted;
		if (fill & (NCCLBPF_NET_R_TIMES | NCCLBPF_NET_R_FLAGS)) {
			if (e->start) {
				ctx.start_ns = nb_ticks_ns(e->start);
				ctx.end_ns = nb_ticks_ns(nb_ticks());
				ctx.duration_ns = ctx.end_ns - ctx.start_ns;
			} else {
				ctx.start_ns = ctx.end_ns = ctx.duration_ns = 0;
				flags |= NCCLBPF_NET_F_UNTIMED;
			}
		}
		ctx.flags = flags;
		if (fill & NCCLBPF_NET_R_REQ) {
			ctx.tag = e->tag;
			ctx.n = e->n;
		}
		if (fill & NCCLBPF_NET_R_CONST) {
			ctx.kind = 0;
			ctx.event = (uint32_t)hook;
			ctx.abi_version = (uint32_t)atomic_load_explicit(&g_nbn_outer_version, memory_order_relaxed);
			ctx.reserved = 0;
		}
		uint64_t seq = atomic_load_explicit(&r->seq[hook], memory_order_relaxed);
		ctx.local_seq = seq;
		bump(shared, &r->seq[hook], 1);
		((nbn_prog_fn)fn)(&ctx);
	}
	leave(r, shared, a);
	atomic_store_explicit(&e->key, 0, memory_order_release);
}

static __attribute__((noinline)) void complete(struct nbn_req *e, nbn_result_t rc, const int *sizes) {
	struct nbn_conn *c = e->conn;
	if (__builtin_expect(c != NULL, 1))
		complete_on(e, rc, sizes, c, 0);
	else
		complete_on(e, rc, sizes, NULL, 1);
}

static __attribute__((noinline)) nbn_result_t w_test_watched(void *request, int *done, int *sizes) {
	nbn_result_t rc = g_nbn_in.v10.test(request, done, sizes);
	/* not done yet (NCCL polls each request many times): nothing to do */
	if (__builtin_expect(rc == NBN_SUCCESS && !*done, 1)) return rc;
	/* Done, or failed: the request is finished either way. Found after the inner test: the inner
	 * plugin may already hand the same pointer to another isend, but on this thread only after we
	 * return, and another thread records it in its own table, while this thread's request (NCCL tests
	 * a request on the thread that posted it) is in this thread's, which req_find searches first. */
	struct nbn_req *e = req_find(request);
	if (e) complete(e, rc, sizes);
	return rc;
}

nbn_result_t w_test(void *request, int *done, int *sizes) {
	/* no request was ever recorded (no net program so far): a jump to the inner plugin's test */
	if (__builtin_expect(atomic_load_explicit(&g_lanes, memory_order_relaxed) == 0, 0))
		return g_nbn_in.v10.test(request, done, sizes);
	return w_test_watched(request, done, sizes);
}

nbn_result_t w_closeSend(void *sendComm) {
	conn_del(sendComm);
	return g_nbn_in.v10.closeSend(sendComm);
}
nbn_result_t w_closeRecv(void *recvComm) {
	conn_del(recvComm);
	return g_nbn_in.v10.closeRecv(recvComm);
}
nbn_result_t w_closeListen(void *listenComm) {
	conn_del(listenComm);
	return g_nbn_in.v10.closeListen(listenComm);
}

/* ------------------------------------------------------------------------------------------------
 * Statistics. */

void ncclbpf_net_get_stats(struct ncclbpf_net_stats *out) {
	struct ncclbpf_net_stats s;
	struct nbn_rec sum;
	memset(&s, 0, sizeof s);
	memset(&sum, 0, sizeof sum);
	pthread_mutex_lock(&g_conn_lock);
	rec_add(&sum, &g_retired);
	for (int i = 0; i < NBN_CONN_N; i++)
		if (atomic_load_explicit(&g_conn_key[i], memory_order_acquire)) rec_add(&sum, &g_conn[i].rec);
	pthread_mutex_unlock(&g_conn_lock);
	rec_add(&sum, &g_shared);
	for (int h = 0; h <= NCCLBPF_NET_LAST_HOOK; h++) s.calls[h] = sum.seq[h];
	s.sends = sum.sends;
	s.recvs = sum.recvs;
	s.untracked = sum.untracked;
	s.conns = atomic_load(&g_conns);
	if (g_req) {
		size_t lanes = atomic_load(&g_lanes);
		for (size_t i = 0; i < lanes * g_req_n; i++)
			if (atomic_load_explicit(&g_req[i].key, memory_order_relaxed)) s.inflight++;
		for (size_t i = NBN_LANES * g_req_n; i < (NBN_LANES + 1) * g_req_n; i++)
			if (atomic_load_explicit(&g_req[i].key, memory_order_relaxed)) s.inflight++;
	}
	s.shared_threads = (int)atomic_load(&g_shared_threads);
	for (int h = NCCLBPF_NET_FIRST_HOOK; h <= NCCLBPF_NET_LAST_HOOK; h++) s.fill[h] = NBN_FILL(atomic_load(&g_nbn_slots[h].word));
	s.outer_version = atomic_load(&g_nbn_outer_version);
	s.inner_version = g_nbn_in_version;
	s.inner_status = g_nbn_in_status;
	*out = s;
}

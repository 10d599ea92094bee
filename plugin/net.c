/* SPDX-License-Identifier: MIT */
/*
 * net.c: the net side of libncclbpf.so, a watching wrapper around the job's own net plugin.
 *
 * NCCL finds ncclNetPlugin_v12, _v11 or _v10 here, or, NCCL 2.21 to 2.26, _v9 or _v8 (NCCL_NET_PLUGIN
 * names this library). The plugin that really moves the bytes is named by NCCLBPF_NET_PLUGIN
 * (resolved as NCCL resolves NCCL_NET_PLUGIN: the name itself, then libnccl-net-NAME.so, or a path)
 * and loaded when this library is. It may export any table NCCL 2.27 to 2.30 itself accepts, looked
 * up newest first: ncclNetPlugin_v12, _v11, _v10, _v9, _v8, _v7, _v6. The older ones (v6..v9) are
 * given the v10 shape once, at load, by adapters that do what NCCL's own do (docs/nccl-net-abi.md,
 * section 7): no profiler callback, no connection configuration, no phandles; int sizes below v9
 * (an isend/irecv of more than 1 GiB, a registration of 2 GiB or more below v8, is refused with
 * ncclInternalError without calling the plugin); fewer properties (the missing ones filled as NCCL
 * fills them); no device handles in v6 (NULL is returned) and no getDeviceMr, irecvConsumed or
 * makeVDevice where the version has none (absent from the exported tables too). Every call goes to
 * the inner plugin with the caller's arguments; comms, requests, memory handles and device handles
 * that NCCL holds are the inner plugin's own. Properties and virtual devices are converted between
 * the caller's version and the inner plugin's (v12's hold 8 devices per virtual NIC, v9..v11's 4).
 * When no inner plugin is configured or it fails to load or init, init fails with one warning and
 * NCCL moves on to its next net transport.
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
 * Environment: NCCLBPF_NET_PLUGIN (the inner plugin), NCCLBPF_NET_REQUESTS (entries of each thread's
 * request table, a power of two, default 16384; read once, at the first init).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "../include/ncclbpf_net.h"
#include "net.h"
#include "net_abi.h"
#include "clock.h"
#include "shim.h"
#include "grace.h"
#include "loader.h"

#define NBN_EXPORT __attribute__((visibility("default")))
#define NBN_PROBE 16
#define NBN_CONN_N 4096 /* connections live at once (NCCL: a few per peer and channel) */
#define NBN_LOG_WARN 2
#define NBN_LOG_INFO 3
#define NBN_SUBSYS (0x1 | 0x10) /* NCCL_INIT | NCCL_NET */

typedef uint64_t (*nbn_prog_fn)(void *ctx);

/* ------------------------------------------------------------------------------------------------
 * Slots and connection records (the profiler's grace-period protocol, profiler.c). */

struct nbn_slot {
	_Alignas(64) _Atomic(uintptr_t) fn;
	/* fill (bits 0-7): the context fields the data path fills for fn (NCCLBPF_NET_R_*): every field
	 * the program reads, as the verifier lists them; reads (8-15): what the published program reads;
	 * bits 16-: a generation, odd while a publish is under way. A publish widens fill to old | new
	 * before it stores fn; a grace period that no publish overlapped narrows it to reads
	 * (ncclbpf_net_synchronize). A thread that loaded fn inside its bracket therefore always fills at
	 * least what fn reads. One word, so that a narrowing and a publish cannot interleave. */
	_Atomic uint64_t word;
};
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

static struct nbn_slot g_slots[NCCLBPF_NET_LAST_HOOK + 1];
static struct nbn_rec g_shared;
static _Atomic uint64_t g_shared_inflight;
static _Atomic uint64_t g_conns;
static _Atomic int g_outer_version; /* net ABI NCCL called init with */

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

uintptr_t ncclbpf_net_publish(int hook, uintptr_t fn, uint32_t reads) {
	if (hook < NCCLBPF_NET_FIRST_HOOK || hook > NCCLBPF_NET_LAST_HOOK) return 0;
	struct nbn_slot *s = &g_slots[hook];
	reads = fn ? reads & 0xff : 0;
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
	for (int h = NCCLBPF_NET_FIRST_HOOK; h <= NCCLBPF_NET_LAST_HOOK; h++) w0[h] = atomic_load(&g_slots[h].word);
	if (nb_grace_fence() != 0) return -1;
	conn_wait_all();
	while (atomic_load(&g_shared_inflight) != 0) sched_yield();
	/* Every run that may have loaded a program older than the one published at w0 is over: fill
	 * what that one reads, unless a publish was under way at w0 or came since (the word changed). */
	for (int h = NCCLBPF_NET_FIRST_HOOK; h <= NCCLBPF_NET_LAST_HOOK; h++) {
		uint64_t w = w0[h];
		if (!((w >> 16) & 1) && NBN_FILL(w) != NBN_READS(w))
			atomic_compare_exchange_strong(&g_slots[h].word, &w, (w & ~(uint64_t)0xff) | NBN_READS(w));
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
	if (!atomic_load_explicit(&g_slots[NCCLBPF_NET_CONN].fn, memory_order_relaxed)) return;
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
	ctx.abi_version = (uint32_t)atomic_load_explicit(&g_outer_version, memory_order_relaxed);
	uint64_t a = enter(r, !c);
	uintptr_t fn = atomic_load_explicit(&g_slots[NCCLBPF_NET_CONN].fn, memory_order_acquire);
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

/* ------------------------------------------------------------------------------------------------
 * The inner plugin. */

static union {
	struct nbn_net_v10 v10;
	struct nbn_net_v11 v11;
} g_in;
static int g_in_version; /* 6 to 12; 0 none */
static int g_in_status = 2; /* 0 loaded, 1 not configured, -1 failed, 2 not yet */
static char g_in_msg[512];
static void *g_in_dl;
static _Atomic int g_warned;
/* outer v10 over an inner v11/v12: one process-wide inner context, made by the first init */
static void *g_in_ctx10;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_in_inited10; /* inner v10 init done (outer v11/v12 calls it once per process) */

extern struct nbn_net_v10 ncclNetPlugin_v10;
extern struct nbn_net_v11 ncclNetPlugin_v11, ncclNetPlugin_v12;
extern struct nbn_net_old ncclNetPlugin_v9, ncclNetPlugin_v8;

/* open_inner resolves name as NCCL resolves NCCL_NET_PLUGIN: the name as given, then, for a bare
 * name (no '/', not lib*.so), libnccl-net-NAME.so. */
static void *open_inner(const char *name, char *err, size_t n) {
	/* A path must name a regular file, as a policy file must: a FIFO would block dlopen until a writer
	 * comes, a device or a directory is no library. (A bare name is searched for by dlopen.) */
	if (strchr(name, '/')) {
		struct stat st;
		if (stat(name, &st) != 0) {
			snprintf(err, n, "%s", strerror(errno));
			return NULL;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, n, "not a regular file (%s)",
			         S_ISFIFO(st.st_mode)  ? "a FIFO"
			         : S_ISDIR(st.st_mode) ? "a directory"
			         : S_ISSOCK(st.st_mode) ? "a socket"
			         : S_ISCHR(st.st_mode)  ? "a character device"
			                                : "a special file");
			return NULL;
		}
	}
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h) return h;
	snprintf(err, n, "%s", dlerror());
	size_t len = strlen(name);
	int is_lib = strncmp(name, "lib", 3) == 0 || (len >= 3 && strcmp(name + len - 3, ".so") == 0);
	if (strchr(name, '/') || is_lib) return NULL;
	char alt[300];
	snprintf(alt, sizeof alt, "libnccl-net-%s.so", name);
	h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	if (!h) snprintf(err, n, "%s", dlerror());
	return h;
}


/* missing_member names a member every version must have and t lacks, or returns NULL. */
static const char *missing_member(const struct nbn_net_v10 *t) {
#define NEED(m)                                                                                                      	if (!t->m) return #m;
	NEED(init) NEED(devices) NEED(getProperties) NEED(listen_) NEED(connect_) NEED(accept) NEED(regMr) NEED(deregMr)
	NEED(isend) NEED(irecv) NEED(test) NEED(closeSend) NEED(closeRecv) NEED(closeListen)
#undef NEED
	return NULL;
}

static void load_inner(void) {
	const char *name = getenv("NCCLBPF_NET_PLUGIN");
	if (!name || !*name) {
		g_in_status = 1;
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN is not set: no net plugin to wrap; NCCL uses its next net transport");
		return;
	}
	char err[256] = "";
	void *h = open_inner(name, err, sizeof err);
	if (!h) {
		g_in_status = -1;
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s: cannot load it (%s); NCCL uses its next net transport", name, err);
		return;
	}
	static const char *syms[] = {"ncclNetPlugin_v12", "ncclNetPlugin_v11", "ncclNetPlugin_v10", "ncclNetPlugin_v9",
	                             "ncclNetPlugin_v8",  "ncclNetPlugin_v7",  "ncclNetPlugin_v6"};
	static const int vers[] = {12, 11, 10, 9, 8, 7, 6};
	for (int i = 0; i < 7; i++) {
		void *t = dlsym(h, syms[i]);
		if (!t) continue;
		if (t == (void *)&ncclNetPlugin_v12 || t == (void *)&ncclNetPlugin_v11 || t == (void *)&ncclNetPlugin_v10 ||
		    t == (void *)&ncclNetPlugin_v9 || t == (void *)&ncclNetPlugin_v8) {
			g_in_status = -1;
			snprintf(g_in_msg, sizeof g_in_msg,
			         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s is libncclbpf itself; name the plugin it should wrap", name);
			dlclose(h);
			return;
		}
		if (vers[i] <= 9)
			nbn_adapt_old(t, vers[i], &g_in.v10);
		else if (vers[i] == 10)
			memcpy(&g_in.v10, t, sizeof g_in.v10);
		else
			memcpy(&g_in.v11, t, sizeof g_in.v11);
		g_in_version = vers[i];
		break;
	}
	if (!g_in_version) {
		g_in_status = -1;
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s exports none of ncclNetPlugin_v12, _v11, _v10, _v9, _v8, _v7, _v6 "
		         "(the net ABIs NCCL accepts); NCCL uses its next net transport", name);
		dlclose(h);
		return;
	}
	const char *miss = missing_member(&g_in.v10);
	if (miss) {
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s: its ncclNetPlugin_v%d has no %s; NCCL uses its next net transport",
		         name, g_in_version, miss);
		g_in_status = -1;
		g_in_version = 0;
		dlclose(h);
		return;
	}
	g_in_dl = h;
	g_in_status = 0;
	/* NCCL selects a net plugin by this name (NCCL_NET, the communicator's netName): present the
	 * wrapped plugin's. */
	if (g_in.v10.name)
		ncclNetPlugin_v10.name = ncclNetPlugin_v11.name = ncclNetPlugin_v12.name = ncclNetPlugin_v9.name =
		    ncclNetPlugin_v8.name = g_in.v10.name;
	snprintf(g_in_msg, sizeof g_in_msg, "ncclbpf: net: wrapping %s (net ABI v%d, \"%s\")", name, g_in_version,
	         g_in.v10.name ? g_in.v10.name : "");
	/* Optional members the inner plugin lacks are absent from ours too (NCCL tests them for NULL when
	 * it reads the table, before init). */
	struct nbn_net_v10 *o10 = &ncclNetPlugin_v10;
	struct nbn_net_v11 *o11[] = {&ncclNetPlugin_v11, &ncclNetPlugin_v12};
#define MIRROR(m)                                                                                                    \
	if (!g_in.v10.m) {                                                                                           \
		o10->m = NULL;                                                                                       \
		o11[0]->m = NULL;                                                                                    \
		o11[1]->m = NULL;                                                                                    \
		ncclNetPlugin_v9.m = NULL;                                                                           \
		ncclNetPlugin_v8.m = NULL;                                                                           \
	}
	MIRROR(regMrDmaBuf)
	MIRROR(getDeviceMr)
	MIRROR(irecvConsumed)
	MIRROR(makeVDevice)
	MIRROR(iflush)
#undef MIRROR
	if (g_in_version >= 11 && !g_in.v11.setNetAttr) ncclNetPlugin_v11.setNetAttr = ncclNetPlugin_v12.setNetAttr = NULL;
}

static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static void load_once(void) { load_inner(); }

/* The clock's calibration (5 ms) and the request table are made by the first net init, not when the
 * library loads: a job that uses only the tuner or profiler pays for neither. */
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

/* names_self reports whether NCCL_NET_PLUGIN's value v (a comma-separated list of names or paths,
 * resolved as NCCL resolves them) names this library, i.e. whether NCCL will use it as its net plugin.
 * Unset, NCCL opens libnccl-net.so. */
static int names_self(const char *v) {
	Dl_info info;
	if (!dladdr((void *)&ncclNetPlugin_v10, &info) || !info.dli_fname) return 0;
	char self[PATH_MAX];
	if (!realpath(info.dli_fname, self)) return 0;
	const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
	if (!v || !*v) return strcmp(base, "libnccl-net.so") == 0;
	char list[4096];
	snprintf(list, sizeof list, "%s", v);
	char *save = NULL;
	for (char *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ') e++;
		char path[PATH_MAX], alt[300];
		if (strchr(e, '/')) {
			if (realpath(e, path) && strcmp(path, self) == 0) return 1;
			continue;
		}
		snprintf(alt, sizeof alt, "libnccl-net-%s.so", e);
		if (strcmp(e, base) == 0 || strcmp(alt, base) == 0) return 1;
	}
	return 0;
}

/* The inner plugin is loaded when the library is opened only by a process whose NCCL will use it as
 * its net plugin (NCCL_NET_PLUGIN names it): NCCL's adapters of old net ABIs copy the table's name and
 * optional members when they load it, before init, so they must be the inner plugin's by then. A
 * process that opens the library as its tuner or profiler only loads nothing more; should its NCCL
 * init the net side all the same, the first init loads the inner plugin (init_common). */
__attribute__((constructor)) static void nbn_ctor(void) {
	if (names_self(getenv("NCCL_NET_PLUGIN"))) pthread_once(&g_load_once, load_once);
}

/* init_common runs at every init: it reports a missing inner plugin once (WARN) and loads the policy,
 * reporting its outcome. */
static int init_common(int outer, nbn_logger_t log) {
	pthread_once(&g_load_once, load_once);
	int expect = 0;
	atomic_compare_exchange_strong(&g_outer_version, &expect, outer);
	if (log)
		ncclbpf_report_load((nb_loader_log_t)log);
	else
		ncclbpf_ensure_loaded();
	if (ncclbpf_strict_failed()) return -1;
	if (g_in_status != 0) {
		if (atomic_exchange(&g_warned, 1) == 0 && log) log(NBN_LOG_WARN, NBN_SUBSYS, __FILE__, __LINE__, "%s", g_in_msg);
		return -1;
	}
	pthread_once(&g_first_init_once, first_init);
	if (!g_table_ok) {
		if (atomic_exchange(&g_warned, 1) == 0 && log)
			log(NBN_LOG_WARN, NBN_SUBSYS, __FILE__, __LINE__,
			    "ncclbpf: net: cannot map the request tables (%d of %zu entries, NCCLBPF_NET_REQUESTS); NCCL uses "
			    "its next net transport",
			    NBN_LANES + 1, g_table_n);
		return -1;
	}
	if (atomic_exchange(&g_warned, 1) == 0 && log) log(NBN_LOG_INFO, NBN_SUBSYS, __FILE__, __LINE__, "%s", g_in_msg);
	return 0;
}

static void init_failed(nbn_logger_t log, int rc) {
	if (log)
		log(NBN_LOG_WARN, NBN_SUBSYS, __FILE__, __LINE__,
		    "ncclbpf: net: the wrapped plugin's init failed (error %d); NCCL uses its next net transport", rc);
}

/* Per-communicator context of the v11/v12 ABI. */
struct nbn_ctx {
	void *inner;                   /* the inner plugin's context (inner v11+) */
	uint64_t comm_id;
	struct nbn_comm_config config; /* for an inner v10's connect */
};

/* ------------------------------------------------------------------------------------------------
 * Exported functions: set-up. */

static nbn_result_t w_init_v11(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
                               nbn_prof_cb_t prof, int outer) {
	if (init_common(outer, log) != 0) return NBN_INTERNAL_ERROR;
	struct nbn_ctx *w = calloc(1, sizeof *w);
	if (!w) return NBN_SYSTEM_ERROR;
	w->comm_id = commId;
	w->config.trafficClass = config ? config->trafficClass : -1;
	nbn_result_t rc;
	if (g_in_version >= 11) {
		rc = g_in.v11.init(&w->inner, commId, config, log, prof);
	} else {
		pthread_mutex_lock(&g_init_lock);
		rc = g_in_inited10 ? NBN_SUCCESS : g_in.v10.init(log, prof);
		if (rc == NBN_SUCCESS) g_in_inited10 = 1;
		pthread_mutex_unlock(&g_init_lock);
	}
	if (rc != NBN_SUCCESS) {
		init_failed(log, rc);
		free(w);
		return rc;
	}
	*ctx = w;
	return NBN_SUCCESS;
}
static nbn_result_t w_init_v11o(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
                                nbn_prof_cb_t prof) {
	return w_init_v11(ctx, commId, config, log, prof, 11);
}
static nbn_result_t w_init_v12o(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
                                nbn_prof_cb_t prof) {
	return w_init_v11(ctx, commId, config, log, prof, 12);
}

/* w_init_process is the init of the ABIs without a per-communicator context (outer v8..v10): the inner
 * plugin is initialized once per process. */
static nbn_result_t w_init_process(nbn_logger_t log, nbn_prof_cb_t prof, int outer) {
	if (init_common(outer, log) != 0) return NBN_INTERNAL_ERROR;
	nbn_result_t rc = NBN_SUCCESS;
	pthread_mutex_lock(&g_init_lock);
	if (g_in_version >= 11) {
		if (!g_in_ctx10) {
			struct nbn_comm_config cfg = {-1};
			rc = g_in.v11.init(&g_in_ctx10, 0, &cfg, log, prof);
		}
	} else if (!g_in_inited10) {
		rc = g_in.v10.init(log, prof);
		if (rc == NBN_SUCCESS) g_in_inited10 = 1;
	}
	pthread_mutex_unlock(&g_init_lock);
	if (rc != NBN_SUCCESS) init_failed(log, rc);
	return rc;
}
static nbn_result_t w_init_v10(nbn_logger_t log, nbn_prof_cb_t prof) { return w_init_process(log, prof, 10); }

static nbn_result_t w_finalize(void *ctx) {
	struct nbn_ctx *w = ctx;
	nbn_result_t rc = NBN_SUCCESS;
	if (!w) return NBN_SUCCESS;
	if (g_in_version >= 11 && g_in.v11.finalize) rc = g_in.v11.finalize(w->inner);
	free(w);
	return rc;
}

static nbn_result_t w_set_net_attr(void *ctx, struct nbn_net_attr *attr) {
	struct nbn_ctx *w = ctx;
	if (g_in_version >= 11 && g_in.v11.setNetAttr) return g_in.v11.setNetAttr(w ? w->inner : NULL, attr);
	return NBN_SUCCESS;
}

static nbn_result_t w_devices(int *ndev) { return g_in.v10.devices(ndev); }

/* Properties. The wrapper's own view of a device is the v12 structure, the widest: what the inner
 * plugin reports is converted into it, and it into the caller's version (pass-through when the
 * two versions are the same). Fields a version lacks get the values NCCL's own adapters give them:
 * maxMultiRequestSize 1 below v11, railId/planeId NCCL_NET_ID_UNDEF below v12. v12's vProps holds 8
 * devices, not 4, so the fields after it are 16 bytes further on than in v9..v11. Not the data
 * path: NCCL reads properties while it sets up. */
static nbn_result_t inner_props(int dev, struct nbn_props_v12 *c) {
	memset(c, 0, sizeof *c);
	c->maxMultiRequestSize = 1;
	c->railId = c->planeId = NBN_NET_ID_UNDEF;
	if (g_in_version == 12) return g_in.v10.getProperties(dev, c);
	struct nbn_props p; /* v10/v11; an inner plugin older than v10 is adapted to v10 (old_props) */
	memset(&p, 0, sizeof p);
	p.maxMultiRequestSize = 1; /* what a v10 (or older) plugin leaves there */
	nbn_result_t rc = g_in.v10.getProperties(dev, &p);
	if (rc != NBN_SUCCESS) return rc;
	memcpy(c, &p, offsetof(struct nbn_props, vProps)); /* the same layout up to vProps */
	c->vProps.ndevs = p.vProps.ndevs;
	memcpy(c->vProps.devs, p.vProps.devs, sizeof p.vProps.devs);
	c->maxP2pBytes = p.maxP2pBytes;
	c->maxCollBytes = p.maxCollBytes;
	c->maxMultiRequestSize = p.maxMultiRequestSize;
	return NBN_SUCCESS;
}

/* props_v11 fills a v10 (with_mreq 0) or v11 structure from the wrapper's view. A virtual device of
 * more than 4 physical ones (only an inner v12 can report one) keeps its first 4: NCCL of these
 * versions makes none larger. */
static nbn_result_t props_v11(int dev, void *out, int with_mreq) {
	struct nbn_props_v12 c;
	nbn_result_t rc = inner_props(dev, &c);
	if (rc != NBN_SUCCESS) return rc;
	struct nbn_props *p = out;
	memcpy(p, &c, offsetof(struct nbn_props, vProps));
	int n = c.vProps.ndevs;
	p->vProps.ndevs = n < 0 ? 0 : n > NBN_MAX_DEVS_PER_NIC ? NBN_MAX_DEVS_PER_NIC : n;
	memcpy(p->vProps.devs, c.vProps.devs, sizeof p->vProps.devs);
	p->maxP2pBytes = c.maxP2pBytes;
	p->maxCollBytes = c.maxCollBytes;
	if (with_mreq) p->maxMultiRequestSize = c.maxMultiRequestSize;
	return NBN_SUCCESS;
}

static nbn_result_t w_props_v10(int dev, void *p) { /* also v9's: the same structure */
	if (g_in_version == 10) return g_in.v10.getProperties(dev, p);
	return props_v11(dev, p, 0);
}
static nbn_result_t w_props_v11(int dev, void *p) {
	if (g_in_version == 11) return g_in.v10.getProperties(dev, p);
	return props_v11(dev, p, 1);
}
static nbn_result_t w_props_v12(int dev, void *p) {
	if (g_in_version == 12) return g_in.v10.getProperties(dev, p);
	struct nbn_props_v12 c;
	nbn_result_t rc = inner_props(dev, &c);
	if (rc == NBN_SUCCESS) memcpy(p, &c, sizeof c);
	return rc;
}

static nbn_result_t listen_common(void *ictx, uint64_t comm_id, int dev, void *handle, void **listenComm) {
	nbn_result_t rc = g_in_version >= 11 ? ((nbn_listen_v11_t)g_in.v11.listen_)(ictx, dev, handle, listenComm)
	                                     : ((nbn_listen_v10_t)g_in.v10.listen_)(dev, handle, listenComm);
	if (rc == NBN_SUCCESS && *listenComm) {
		uint64_t key = hash_handle(handle);
		struct nbn_conn *c = conn_add(*listenComm, comm_id, key, dev, NCCLBPF_NET_KIND_LISTEN);
		conn_event(c, dev, NCCLBPF_NET_KIND_LISTEN, comm_id, key);
	}
	return rc;
}
static nbn_result_t w_listen_v11(void *ctx, int dev, void *handle, void **listenComm) {
	struct nbn_ctx *w = ctx;
	return listen_common(w ? w->inner : NULL, w ? w->comm_id : 0, dev, handle, listenComm);
}
static nbn_result_t w_listen_v10(int dev, void *handle, void **listenComm) {
	return listen_common(g_in_ctx10, 0, dev, handle, listenComm);
}

static nbn_result_t connect_common(void *ictx, struct nbn_comm_config *cfg, uint64_t comm_id, int dev, void *handle,
                                   void **sendComm, struct nbn_dev_handle **sendDevComm) {
	nbn_result_t rc = g_in_version >= 11
	                      ? ((nbn_connect_v11_t)g_in.v11.connect_)(ictx, dev, handle, sendComm, sendDevComm)
	                      : ((nbn_connect_v10_t)g_in.v10.connect_)(dev, cfg, handle, sendComm, sendDevComm);
	if (rc == NBN_SUCCESS && *sendComm) {
		uint64_t key = hash_handle(handle);
		struct nbn_conn *c = conn_add(*sendComm, comm_id, key, dev, NCCLBPF_NET_KIND_CONNECT);
		conn_event(c, dev, NCCLBPF_NET_KIND_CONNECT, comm_id, key);
	}
	return rc;
}
static nbn_result_t w_connect_v11(void *ctx, int dev, void *handle, void **sendComm,
                                  struct nbn_dev_handle **sendDevComm) {
	struct nbn_ctx *w = ctx;
	return connect_common(w ? w->inner : NULL, w ? &w->config : NULL, w ? w->comm_id : 0, dev, handle, sendComm,
	                      sendDevComm);
}
static nbn_result_t w_connect_v10(int dev, struct nbn_comm_config *cfg, void *handle, void **sendComm,
                                  struct nbn_dev_handle **sendDevComm) {
	return connect_common(g_in_ctx10, cfg, 0, dev, handle, sendComm, sendDevComm);
}

static nbn_result_t w_accept(void *listenComm, void **recvComm, struct nbn_dev_handle **recvDevComm) {
	nbn_result_t rc = g_in.v10.accept(listenComm, recvComm, recvDevComm);
	if (rc == NBN_SUCCESS && *recvComm) {
		struct nbn_conn *l = conn_find(listenComm);
		uint64_t comm_id = l ? l->comm_id : 0, key = l ? l->peer_key : 0;
		int dev = l ? l->dev : -1;
		struct nbn_conn *c = conn_add(*recvComm, comm_id, key, dev, NCCLBPF_NET_KIND_ACCEPT);
		conn_event(c, dev, NCCLBPF_NET_KIND_ACCEPT, comm_id, key);
	}
	return rc;
}

static nbn_result_t w_regMr(void *comm, void *data, size_t size, int type, void **mhandle) {
	return g_in.v10.regMr(comm, data, size, type, mhandle);
}
static nbn_result_t w_regMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                  void **mhandle) {
	return g_in.v10.regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
}
static nbn_result_t w_deregMr(void *comm, void *mhandle) { return g_in.v10.deregMr(comm, mhandle); }

/* ------------------------------------------------------------------------------------------------
 * The data path. */

/* Requests are recorded only while a program watches their completion: without one, the data path
 * costs a slot load at isend/irecv, and at test a load (before any request was recorded) or a probe
 * of the calling thread's lane. A request posted before a program was published completes unseen. */
static inline uintptr_t watching(int hook) {
	return atomic_load_explicit(&g_slots[hook].fn, memory_order_relaxed);
}

/* start_ticks is the request's start: the cycle counter when hook's program reads times, 0 (not
 * timed) otherwise. */
static inline uint64_t start_ticks(int hook) {
	return (atomic_load_explicit(&g_slots[hook].word, memory_order_relaxed) & NCCLBPF_NET_R_TIMES) ? nb_ticks()
	                                                                                                : 0;
}

static inline __attribute__((always_inline)) void record(void *req, void *comm, uint64_t posted, int tag, int n, int is_send, int hook) {
	struct nbn_conn *c = conn_find(comm);
	if (__builtin_expect(!req_add(req, c, posted, tag, n, is_send, start_ticks(hook)), 0)) {
		struct nbn_rec *r = c ? &c->rec : &g_shared;
		bump(!c, &r->untracked, 1);
	}
}

static __attribute__((noinline)) nbn_result_t w_isend_watched(void *sendComm, void *data, size_t size, int tag,
                                                              void *mhandle, void *phandle, void **request) {
	nbn_result_t rc = g_in.v10.isend(sendComm, data, size, tag, mhandle, phandle, request);
	if (rc == NBN_SUCCESS && *request) record(*request, sendComm, size, tag, 1, 1, NCCLBPF_NET_SEND_END);
	return rc;
}

static __attribute__((noinline)) nbn_result_t w_irecv_watched(void *recvComm, int n, void **data, size_t *sizes,
                                                              int *tags, void **mhandles, void **phandles,
                                                              void **request) {
	nbn_result_t rc = g_in.v10.irecv(recvComm, n, data, sizes, tags, mhandles, phandles, request);
	if (rc == NBN_SUCCESS && *request) {
		uint64_t posted = 0;
		for (int i = 0; i < n; i++) posted += sizes ? sizes[i] : 0;
		record(*request, recvComm, posted, (n > 0 && tags) ? tags[0] : -1, n, 0, NCCLBPF_NET_RECV_END);
	}
	return rc;
}

/* isend and irecv check for a program first: without one they are a jump to the inner plugin's. */
static nbn_result_t w_isend(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                            void **request) {
	if (!watching(NCCLBPF_NET_SEND_END)) return g_in.v10.isend(sendComm, data, size, tag, mhandle, phandle, request);
	return w_isend_watched(sendComm, data, size, tag, mhandle, phandle, request);
}

static nbn_result_t w_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                            void **phandles, void **request) {
	if (!watching(NCCLBPF_NET_RECV_END))
		return g_in.v10.irecv(recvComm, n, data, sizes, tags, mhandles, phandles, request);
	return w_irecv_watched(recvComm, n, data, sizes, tags, mhandles, phandles, request);
}

static nbn_result_t w_iflush(void *recvComm, int n, void *data[], int *sizes, void **mhandles, void **request) {
	return g_in.v10.iflush(recvComm, n, data, sizes, mhandles, request);
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
	uintptr_t fn = atomic_load_explicit(&g_slots[hook].fn, memory_order_acquire);
	if (__builtin_expect(fn != 0, 1)) {
		/* loaded inside the bracket, after fn: at least what fn reads (ncclbpf_net_publish) */
		uint32_t fill = NBN_FILL(atomic_load_explicit(&g_slots[hook].word, memory_order_relaxed));
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
			ctx.abi_version = (uint32_t)atomic_load_explicit(&g_outer_version, memory_order_relaxed);
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
	nbn_result_t rc = g_in.v10.test(request, done, sizes);
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

static nbn_result_t w_test(void *request, int *done, int *sizes) {
	/* no request was ever recorded (no net program so far): a jump to the inner plugin's test */
	if (__builtin_expect(atomic_load_explicit(&g_lanes, memory_order_relaxed) == 0, 0))
		return g_in.v10.test(request, done, sizes);
	return w_test_watched(request, done, sizes);
}

static nbn_result_t w_closeSend(void *sendComm) {
	conn_del(sendComm);
	return g_in.v10.closeSend(sendComm);
}
static nbn_result_t w_closeRecv(void *recvComm) {
	conn_del(recvComm);
	return g_in.v10.closeRecv(recvComm);
}
static nbn_result_t w_closeListen(void *listenComm) {
	conn_del(listenComm);
	return g_in.v10.closeListen(listenComm);
}
static nbn_result_t w_getDeviceMr(void *comm, void *mhandle, void **dptr) {
	return g_in.v10.getDeviceMr(comm, mhandle, dptr);
}
static nbn_result_t w_irecvConsumed(void *recvComm, int n, void *request) {
	return g_in.v10.irecvConsumed(recvComm, n, request);
}
/* makeVDevice: v9..v11 describe a virtual device with up to 4 physical ones, v12 with up to 8. NCCL
 * 2.30 asks a pre-v12 plugin for 4 at most, but the wrapper is a v12 plugin to it: more than 4
 * devices for an inner plugin older than v12 is refused (ncclInvalidArgument) without calling it
 * (NCCL's automatic NIC fusion then leaves those devices unmerged). Otherwise the description is
 * copied between the two structures. */
static nbn_result_t w_makeVDevice(int *d, void *props) { /* outer v9, v10, v11 */
	if (g_in_version != 12) return g_in.v10.makeVDevice(d, props);
	const struct nbn_vprops *p = props;
	if (p->ndevs < 0 || p->ndevs > NBN_MAX_DEVS_PER_NIC) return NBN_INVALID_ARGUMENT;
	struct nbn_vprops_v12 q;
	memset(&q, 0, sizeof q);
	q.ndevs = p->ndevs;
	memcpy(q.devs, p->devs, sizeof p->devs);
	return g_in.v10.makeVDevice(d, &q);
}
static nbn_result_t w_makeVDevice_v12(int *d, void *props) {
	if (g_in_version == 12) return g_in.v10.makeVDevice(d, props);
	const struct nbn_vprops_v12 *p = props;
	if (p->ndevs < 0 || p->ndevs > NBN_MAX_DEVS_PER_NIC) return NBN_INVALID_ARGUMENT;
	struct nbn_vprops q;
	memset(&q, 0, sizeof q);
	q.ndevs = p->ndevs;
	memcpy(q.devs, p->devs, sizeof q.devs);
	return g_in.v10.makeVDevice(d, &q);
}

/* ------------------------------------------------------------------------------------------------
 * The exported tables. Not const: optional members the inner plugin lacks are cleared at load. */

#define COMMON(props_fn, listen_fn, connect_fn, vdev_fn)                                                            \
	.devices = w_devices, .getProperties = props_fn, .listen_ = (void *)listen_fn, .connect_ = (void *)connect_fn, \
	.accept = w_accept, .regMr = w_regMr, .regMrDmaBuf = w_regMrDmaBuf, .deregMr = w_deregMr, .isend = w_isend,  \
	.irecv = w_irecv, .iflush = w_iflush, .test = w_test, .closeSend = w_closeSend, .closeRecv = w_closeRecv,     \
	.closeListen = w_closeListen, .getDeviceMr = w_getDeviceMr, .irecvConsumed = w_irecvConsumed,                \
	.makeVDevice = vdev_fn

NBN_EXPORT struct nbn_net_v10 ncclNetPlugin_v10 = {
    .name = "ncclbpf", .init = w_init_v10, COMMON(w_props_v10, w_listen_v10, w_connect_v10, w_makeVDevice)};
NBN_EXPORT struct nbn_net_v11 ncclNetPlugin_v11 = {.name = "ncclbpf",
                                                   .init = w_init_v11o,
                                                   COMMON(w_props_v11, w_listen_v11, w_connect_v11, w_makeVDevice),
                                                   .finalize = w_finalize,
                                                   .setNetAttr = w_set_net_attr};
NBN_EXPORT struct nbn_net_v11 ncclNetPlugin_v12 = {.name = "ncclbpf",
                                                   .init = w_init_v12o,
                                                   COMMON(w_props_v12, w_listen_v11, w_connect_v11, w_makeVDevice_v12),
                                                   .finalize = w_finalize,
                                                   .setNetAttr = w_set_net_attr};

/* ---- ncclNetPlugin_v9 and _v8, for NCCL 2.21 to 2.26 (section 7 of docs/nccl-net-abi.md) ---------
 * The same wrapper under the older signatures: no profiler callback, no connection configuration
 * (the inner plugin gets an undefined traffic class), no phandles; v8 has int sizes and the v8
 * properties. Tables in the layout of struct nbn_net_old (v8 ends before makeVDevice). */

static struct nbn_comm_config g_cfg_undef = {-1};
static nbn_result_t o_init_v9(nbn_logger_t log) { return w_init_process(log, NULL, 9); }
static nbn_result_t o_init_v8(nbn_logger_t log) { return w_init_process(log, NULL, 8); }
static nbn_result_t o_props_v9(int dev, void *p) { return w_props_v10(dev, p); } /* v9's is v10's */
static nbn_result_t o_props_v8(int dev, void *out) {
	struct nbn_props_v12 p;
	nbn_result_t rc = inner_props(dev, &p);
	if (rc != NBN_SUCCESS) return rc;
	struct nbn_props_v8 *q = out;
	q->name = p.name;
	q->pciPath = p.pciPath;
	q->guid = p.guid;
	q->ptrSupport = p.ptrSupport;
	q->regIsGlobal = p.regIsGlobal;
	q->speed = p.speed;
	q->port = p.port;
	q->latency = p.latency;
	q->maxComms = p.maxComms;
	q->maxRecvs = p.maxRecvs;
	q->netDeviceType = p.netDeviceType;
	q->netDeviceVersion = p.netDeviceVersion;
	return NBN_SUCCESS;
}
static nbn_result_t o_connect(int dev, void *handle, void **sendComm, struct nbn_dev_handle **sendDevComm) {
	return connect_common(g_in_ctx10, &g_cfg_undef, 0, dev, handle, sendComm, sendDevComm);
}
static nbn_result_t o_isend_v9(void *sendComm, void *data, size_t size, int tag, void *mhandle, void **request) {
	return w_isend(sendComm, data, size, tag, mhandle, NULL, request);
}
static nbn_result_t o_irecv_v9(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                               void **request) {
	return w_irecv(recvComm, n, data, sizes, tags, mhandles, NULL, request);
}
static nbn_result_t o_isend_v8(void *sendComm, void *data, int size, int tag, void *mhandle, void **request) {
	if (size < 0) return NBN_INVALID_ARGUMENT;
	return w_isend(sendComm, data, (size_t)size, tag, mhandle, NULL, request);
}
static nbn_result_t o_irecv_v8(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
                               void **request) {
	size_t s[NBN_MAX_SUBS];
	if (n < 0 || n > NBN_MAX_SUBS) return NBN_INTERNAL_ERROR;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0) return NBN_INVALID_ARGUMENT;
		s[i] = (size_t)sizes[i];
	}
	return w_irecv(recvComm, n, data, s, tags, mhandles, NULL, request);
}

#define OLD_COMMON                                                                                                  	.name = "ncclbpf", .devices = w_devices, .listen = w_listen_v10, .connect = (void *)o_connect,                 	.accept = (void *)w_accept, .regMr = (void *)w_regMr, .regMrDmaBuf = w_regMrDmaBuf, .deregMr = w_deregMr,      	.iflush = w_iflush, .test = w_test, .closeSend = w_closeSend, .closeRecv = w_closeRecv,                         	.closeListen = w_closeListen, .getDeviceMr = w_getDeviceMr, .irecvConsumed = w_irecvConsumed
NBN_EXPORT struct nbn_net_old ncclNetPlugin_v9 = {OLD_COMMON, .init = o_init_v9, .getProperties = o_props_v9,
                                                  .isend = (void *)o_isend_v9, .irecv = (void *)o_irecv_v9,
                                                  .makeVDevice = w_makeVDevice};
NBN_EXPORT struct nbn_net_old ncclNetPlugin_v8 = {OLD_COMMON, .init = o_init_v8, .getProperties = o_props_v8,
                                                  .isend = (void *)o_isend_v8, .irecv = (void *)o_irecv_v8,
                                                  .makeVDevice = NULL /* not in v8 */};

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
	for (int h = NCCLBPF_NET_FIRST_HOOK; h <= NCCLBPF_NET_LAST_HOOK; h++) s.fill[h] = NBN_FILL(atomic_load(&g_slots[h].word));
	s.outer_version = atomic_load(&g_outer_version);
	s.inner_version = g_in_version;
	s.inner_status = g_in_status;
	*out = s;
}

const char *ncclbpf_net_inner_message(void) { return g_in_msg; }

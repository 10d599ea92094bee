/* SPDX-License-Identifier: MIT */
/*
 * profiler_host.c: the profiler side of the NCCL-like test host.
 *
 * It dlopens a profiler plugin (RTLD_NOW | RTLD_LOCAL, like NCCL), takes ncclProfiler_vN and emits
 * the event sequence NCCL emits (docs: nccl-plugin-abi.md §2): per collective, on the user thread,
 * GroupApi/CollApi (v5+), Group, Coll (parent CollApi on v5+, Group before), KernelLaunch (v5+), the
 * task stop ("enqueued"), then on a separate proxy thread per communicator: per channel a KernelCh
 * (v3+, GPU timer stamps v4+), two ProxyOps (send, receive) with their ProxySteps, a KernelChStop
 * state and the stops. Durations come from profiler_model.h.
 *
 *   profiler_host events LIB          every exported version, 4 communicators on threads, the shim's
 *                                     hooks running recording programs published by the host:
 *                                     checks pairing, identity, hierarchy, times, counters
 *   profiler_host eventslight LIB     the same without a kernel_ch_end program: channels kept in their tasks
 *   profiler_host mask LIB            no program published: init must leave the mask at 0
 *   profiler_host fill LIB            every exported version: one collective and one send as NCCL of that
 *                                     version describes them; prints what it passed ("nccl:V:HOOK FIELD
 *                                     VALUE") and the contexts the programs saw ("ctx:V:HOOK ...")
 *   profiler_host maskon LIB          the library's bundle has a coll_end program: the first profiler
 *                                     init (before any tuner init, as in NCCL) sets the mask
 *   profiler_host needs LIB MASK KCH  the bundle's programs decide the activation mask: exactly MASK, and
 *                                     the events it asks for reach them (KCH 1: a kernel_ch_end program)
 *   profiler_host maskreload LIB      p2p traffic under NCCL's mask as reloads change it (see run_maskreload)
 *   profiler_host threadexit LIB      free events kept by exited threads do not drain a context's pool
 *   profiler_host solo LIB            tasks released without a compare-and-swap: across threads, children after a reload
 *   profiler_host calls LIB N [timed] N collectives, task start and stop only, empty program reading nothing
 *                                     (timed: reading the times, with 2 kernel channels a collective)
 *   profiler_host nokch LIB           NCCL never sends the kernel channels the mask asks for (1-rank
 *                                     communicator): tasks must complete all the same
 *   profiler_host swap LIB            programs swapped in all slots under load, each swap followed by
 *                                     ncclbpf_prof_synchronize: no call may run retired code
 *   profiler_host stuck LIB           tasks whose announced channels partly never come: completed
 *                                     (forced) by the sweep, nothing leaks with a 64-event pool
 *   profiler_host loop LIB [native]   closed loop (profiler v5 + tuner v5): the bundle's adaptive
 *                                     policy (NCCLBPF_POLICY) or, with "native", the C version of it;
 *                                     agreement every 64 calls ($NCCLBPF_AGREE_CMD, see run_loop)
 *   profiler_host bench LIB [native]  ns per profiler event, with latency_stats: the bundle's
 *                                     (skipped with "native"), the native C version, no program
 *   profiler_host loadwarn LIB        the library as NCCL's profiler only: the outcome of the policy
 *                                     load reaches NCCL's logger once (v5 init); counts failed inits
 *   profiler_host metrics LIB [N [7]] known traffic for the exporter (run_metrics), then waits for
 *                                     stdin to close; 7: profiler ABI v7, collectives with user tags
 *   profiler_host ranks LIB native|ebpf N SKEW NOISE
 *                                     N ranks in separate processes run the closed loop, rank r
 *                                     measuring skew_r % off (-SKEW..+SKEW over the ranks) with
 *                                     independent +-NOISE % noise, agreeing every 64 calls: compares
 *                                     the full decision logs call by call (rank inconsistency)
 *
 * Exit status 0 when every check passed; failures are printed as "FAIL: ...".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../include/ncclbpf_profiler.h"
#include "../plugin/profiler.h"
#include "../plugin/profiler_abi.h"
#include "profiler_model.h"
#include "profiler_native.h"

static int failures;
#define CHECK(cond, ...)                                                                              \
	do {                                                                                              \
		if (!(cond)) {                                                                                \
			if (failures++ < 30) {                                                                    \
				fprintf(stderr, "FAIL: " __VA_ARGS__);                                                \
				fputc('\n', stderr);                                                                  \
			}                                                                                         \
		}                                                                                             \
	} while (0)

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* NCCL's logger: silent, unless HOST_LOG is set: then every line goes to stderr as
 * "nccl LEVEL FLAGS message". */
static void host_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)file, (void)line;
	if (!getenv("HOST_LOG")) return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "nccl %d %#lx %s\n", level, flags, buf);
}

/* ---- the plugin, version-neutral --------------------------------------------------------------- */

typedef nbp_result_t (*start_fn)(void *, void **, void *);
typedef nbp_result_t (*stop_fn)(void *);
typedef nbp_result_t (*record_fn)(void *, nbp_state_t, void *);
typedef nbp_result_t (*fin_fn)(void *);

struct plug {
	void *lib;
	int v;
	const void *sym;
	start_fn start;
	stop_fn stop;
	record_fn record;
	fin_fn finalize;
	uintptr_t (*publish)(int, uintptr_t);
	int (*refresh)(void);
	void (*stats)(struct ncclbpf_prof_stats *);
	int (*synchronize)(void);
};

static int plug_open(struct plug *p, const char *path, int v) {
	memset(p, 0, sizeof *p);
	p->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!p->lib) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	char name[32];
	snprintf(name, sizeof name, "ncclProfiler_v%d", v);
	p->sym = dlsym(p->lib, name);
	if (!p->sym) {
		fprintf(stderr, "%s: no symbol %s\n", path, name);
		return -1;
	}
	p->v = v;
	/* Every version's struct starts name, init, startEvent, stopEvent, recordEventState, finalize. */
	const nbp_profiler_v1_t *s = p->sym;
	p->start = (start_fn)s->startEvent;
	p->stop = s->stopEvent;
	p->record = (record_fn)s->recordEventState;
	p->finalize = s->finalize;
	p->publish = (uintptr_t(*)(int, uintptr_t))dlsym(p->lib, "ncclbpf_prof_publish");
	p->refresh = (int (*)(void))dlsym(p->lib, "ncclbpf_prof_refresh_mask");
	p->stats = (void (*)(struct ncclbpf_prof_stats *))dlsym(p->lib, "ncclbpf_prof_get_stats");
	p->synchronize = (int (*)(void))dlsym(p->lib, "ncclbpf_prof_synchronize");
	return 0;
}

static int plug_init(struct plug *p, void **ctx, uint64_t comm_id, int *mask, int nranks, int rank) {
	switch (p->v) {
	case 7:
	case 6:
	case 5:
		return ((const nbp_profiler_v6_t *)p->sym)->init(ctx, comm_id, mask, "comm", 1, nranks, rank, host_log);
	case 4:
		return ((const nbp_profiler_v4_t *)p->sym)->init(ctx, mask, "comm", comm_id, 1, nranks, rank, host_log);
	default:
		return ((const nbp_profiler_v1_t *)p->sym)->init(ctx, mask);
	}
}

/* ---- descriptors --------------------------------------------------------------------------------- */

static const char *func_names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
                                   "SendRecv", "Send", "Recv"};
static const char *algo_names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char *proto_names[] = {"LL", "LL128", "SIMPLE"};

union descr {
	nbp_descr_v7_t v7; /* v6's members at v6's offsets, and the v7 additions */
	nbp_descr_v6_t v6;
	nbp_descr_v4_t v4;
	nbp_descr_v3_t v3;
	nbp_descr_v2_t v2;
	nbp_descr_v1_t v1;
};

static void d_head(int v, union descr *d, uint64_t type, void *parent, int rank) {
	memset(d, 0, sizeof *d);
	if (v >= 5) {
		d->v6.type = type;
		d->v6.parentObj = parent;
		d->v6.rank = rank;
	} else { /* v1..v4 share type (uint8) / parentObj / rank offsets */
		d->v4.type = (uint8_t)type;
		d->v4.parentObj = parent;
		d->v4.rank = rank;
	}
}

struct task {
	int is_p2p;
	uint64_t seq;
	int func, algo, proto, nch, peer;
	size_t count; /* float32 elements */
	uint64_t gpu_ns;
	int net; /* emit proxy ops */
	int nsteps;
	uint64_t user_tag;   /* v7 */
	const char *variant; /* v7, collectives */
	int sym;             /* v7, collectives */
};

static void d_task(int v, union descr *d, const struct task *t, void *parent, void *group, int rank) {
	d_head(v, d, t->is_p2p ? NBP_EV_P2P : NBP_EV_COLL, v >= 5 ? parent : group, rank);
	const char *fn = func_names[t->func];
	if (!t->is_p2p) {
		switch (v) {
		case 7: /* v7 keeps v6's members at v6's offsets */
		case 6:
		case 5:
			d->v6.coll.seqNumber = t->seq, d->v6.coll.func = fn, d->v6.coll.count = t->count;
			d->v6.coll.datatype = "ncclFloat32", d->v6.coll.nChannels = (uint8_t)t->nch, d->v6.coll.nWarps = 16;
			d->v6.coll.algo = algo_names[t->algo], d->v6.coll.proto = proto_names[t->proto];
			d->v6.coll.parentGroup = group;
			break;
		case 4:
			d->v4.coll.seqNumber = t->seq, d->v4.coll.func = fn, d->v4.coll.count = t->count;
			d->v4.coll.datatype = "ncclFloat32", d->v4.coll.nChannels = (uint8_t)t->nch;
			d->v4.coll.algo = algo_names[t->algo], d->v4.coll.proto = proto_names[t->proto];
			break;
		case 3:
			d->v3.coll.seqNumber = t->seq, d->v3.coll.func = fn, d->v3.coll.count = t->count;
			d->v3.coll.datatype = "ncclFloat32", d->v3.coll.nMaxChannels = (uint8_t)t->nch;
			d->v3.coll.algo = algo_names[t->algo], d->v3.coll.proto = proto_names[t->proto];
			break;
		case 2:
			d->v2.coll.seqNumber = t->seq, d->v2.coll.func = fn, d->v2.coll.count = t->count;
			d->v2.coll.datatype = "ncclFloat32", d->v2.coll.nMaxChannels = (uint8_t)t->nch;
			d->v2.coll.algo = algo_names[t->algo], d->v2.coll.proto = proto_names[t->proto];
			break;
		case 1:
			d->v1.coll.seqNumber = t->seq, d->v1.coll.func = (uint8_t)t->func, d->v1.coll.count = t->count;
			d->v1.coll.datatype = 7 /* ncclFloat32 */, d->v1.coll.nMaxChannels = (uint8_t)t->nch;
			d->v1.coll.algo = (uint8_t)t->algo, d->v1.coll.proto = (uint8_t)t->proto;
			break;
		}
	} else {
		switch (v) {
		case 7: /* v7 keeps v6's members at v6's offsets */
		case 6:
		case 5:
			d->v6.p2p.func = fn, d->v6.p2p.count = t->count, d->v6.p2p.datatype = "ncclFloat32";
			d->v6.p2p.peer = t->peer, d->v6.p2p.nChannels = (uint8_t)t->nch, d->v6.p2p.parentGroup = group;
			break;
		case 4:
			d->v4.p2p.func = fn, d->v4.p2p.count = t->count, d->v4.p2p.datatype = "ncclFloat32";
			d->v4.p2p.peer = t->peer, d->v4.p2p.nChannels = (uint8_t)t->nch;
			break;
		case 3:
			d->v3.p2p.func = fn, d->v3.p2p.count = t->count, d->v3.p2p.datatype = "ncclFloat32", d->v3.p2p.peer = t->peer;
			break;
		case 2:
			d->v2.p2p.func = fn, d->v2.p2p.count = t->count, d->v2.p2p.datatype = "ncclFloat32", d->v2.p2p.peer = t->peer;
			break;
		case 1:
			d->v1.p2p.func = (uint8_t)t->func, d->v1.p2p.count = t->count, d->v1.p2p.datatype = 7, d->v1.p2p.peer = t->peer;
			break;
		}
	}
	if (v == 7 && !t->is_p2p) {
		d->v7.coll.userTag = t->user_tag;
		d->v7.coll.kernelVariant = t->variant;
		d->v7.coll.isSymColl = t->sym != 0;
	} else if (v == 7) {
		d->v7.p2p.userTag = t->user_tag;
	}
}

/* Kernel channels: v3 has them without timers (NCCL's v3 adapter also drops the KernelChStop
 * state); v1/v2 have none. */
static void d_kch(int v, union descr *d, void *parent, int ch, uint64_t ptimer) {
	d_head(v, d, NBP_EV_KERNEL_CH, parent, 0);
	if (v >= 5) {
		d->v6.kernelCh.channelId = (uint8_t)ch;
		d->v6.kernelCh.pTimer = ptimer;
	} else if (v == 4) {
		d->v4.kernelCh.channelId = (uint8_t)ch;
		d->v4.kernelCh.pTimer = ptimer;
	} else {
		d->v3.kernelCh.channelId = (uint8_t)ch;
	}
}

static void d_proxy_op(int v, union descr *d, void *parent, int rank, int ch, int peer, int nsteps, int is_send) {
	d_head(v, d, NBP_EV_PROXY_OP, parent, rank);
	/* proxyOp has the same layout at offset 24 in every version */
	d->v4.proxyOp.pid = getpid();
	d->v4.proxyOp.channelId = (uint8_t)ch;
	d->v4.proxyOp.peer = peer;
	d->v4.proxyOp.nSteps = nsteps;
	d->v4.proxyOp.chunkSize = 131072;
	d->v4.proxyOp.isSend = is_send;
}

static void d_step(int v, union descr *d, void *parent, int rank, int step) {
	d_head(v, d, NBP_EV_PROXY_STEP, parent, rank);
	d->v4.proxyStep.step = step;
}

static void d_other(int v, union descr *d, uint64_t type, void *parent, int rank) { d_head(v, d, type, parent, rank); }

/* ---- a communicator: user thread side and proxy thread ------------------------------------------ */

#define QN 256
struct work {
	void *handle;
	struct task t;
	int mask; /* the activation mask at the task's API call (NCCL copies it into the task) */
};

struct comm {
	struct plug *p;
	void *ctx;
	uint64_t comm_id;
	int rank, nranks;
	int mask;
	uint64_t gpu_clock; /* the fake GPU global timer */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct work q[QN];
	unsigned head, tail;
	int closing;
	pthread_t proxy;
	int no_kch;      /* behave like NCCL on a 1-rank communicator: no kernel-channel events */
	int kch_max;     /* > 0: report at most this many of a task's channels (the others never come) */
	uint64_t events; /* plugin calls made (start, stop, record) */
	uint64_t proxy_events;
	unsigned seed;
};

static void q_push(struct comm *c, const struct work *w) {
	pthread_mutex_lock(&c->mu);
	while (c->tail - c->head == QN) pthread_cond_wait(&c->cv, &c->mu);
	c->q[c->tail++ % QN] = *w;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void emit_proxy_side(struct comm *c, struct work *w) {
	struct plug *p = c->p;
	int v = p->v;
	union descr d;
	void *kh[64];
	uint64_t base = c->gpu_clock;
	c->gpu_clock += w->t.gpu_ns + 1000;
	int nch = w->t.nch > 64 ? 64 : w->t.nch;
	for (int ch = 0; ch < nch; ch++) {
		kh[ch] = NULL;
		if (v >= 3 && (w->mask & NBP_EV_KERNEL_CH) && !c->no_kch && !(c->kch_max > 0 && ch >= c->kch_max)) {
			d_kch(v, &d, w->handle, ch, v >= 4 ? base + (uint64_t)ch * 10 : 0);
			p->start(c->ctx, &kh[ch], &d);
			c->proxy_events++;
		}
		if (w->t.net && (w->mask & (NBP_EV_PROXY_OP | NBP_EV_PROXY_STEP))) {
			for (int send = 1; send >= 0; send--) {
				void *oh = NULL;
				d_proxy_op(v, &d, w->handle, c->rank, ch, (c->rank + (send ? 1 : c->nranks - 1)) % c->nranks,
				           w->t.nsteps, send);
				p->start(c->ctx, &oh, &d);
				c->proxy_events++;
				for (int s = 0; s < w->t.nsteps; s++) {
					void *sh = NULL;
					d_step(v, &d, oh, c->rank, s);
					if (w->mask & NBP_EV_PROXY_STEP) {
						p->start(c->ctx, &sh, &d);
						c->proxy_events++;
					}
					if (sh) {
						union { nbp_state_args_v6_t a6; nbp_state_args_v3_t a3; } a;
						memset(&a, 0, sizeof a);
						a.a6.proxyStep.transSize = v >= 4 ? 4096 : 0; /* NCCL's v1-v3 adapters pass zeroed step args */
						p->record(sh, send ? NBP_ST_STEP_SEND_WAIT : NBP_ST_STEP_RECV_WAIT, &a);
						p->stop(sh);
						c->proxy_events += 2;
					}
				}
				if (oh) {
					union { nbp_state_args_v6_t a6; nbp_state_args_v3_t a3; } a;
					memset(&a, 0, sizeof a);
					if (v >= 4) p->record(oh, NBP_ST_PROXY_OP_IN_PROGRESS, &a);
					p->stop(oh);
					c->proxy_events += 2;
				}
			}
		}
	}
	for (int ch = 0; ch < nch; ch++) {
		if (!kh[ch]) continue;
		if (v >= 4) {
			nbp_state_args_v6_t a = {.kernelCh = {.pTimer = base + w->t.gpu_ns}};
			p->record(kh[ch], NBP_ST_KERNEL_CH_STOP, &a);
			c->proxy_events++;
		}
		p->stop(kh[ch]);
		c->proxy_events++;
	}
}

static void *proxy_main(void *arg) {
	struct comm *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		while (c->head == c->tail && !c->closing) pthread_cond_wait(&c->cv, &c->mu);
		if (c->head == c->tail && c->closing) {
			pthread_mutex_unlock(&c->mu);
			return NULL;
		}
		struct work w = c->q[c->head++ % QN];
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		emit_proxy_side(c, &w);
	}
}

static int comm_open(struct comm *c, struct plug *p, uint64_t comm_id, int rank, int nranks, int *mask) {
	memset(c, 0, sizeof *c);
	c->p = p;
	c->comm_id = comm_id;
	c->rank = rank;
	c->nranks = nranks;
	c->seed = (unsigned)(comm_id * 2654435761u + (unsigned)rank);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->gpu_clock = 1000000000ull; /* the GPU global timer is never 0 */
	if (plug_init(p, &c->ctx, comm_id, mask, nranks, rank) != 0) return -1;
	c->mask = __atomic_load_n(mask, __ATOMIC_RELAXED);
	return pthread_create(&c->proxy, NULL, proxy_main, c);
}

static void comm_close(struct comm *c) {
	pthread_mutex_lock(&c->mu);
	c->closing = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->proxy, NULL);
	c->p->finalize(c->ctx);
}

/* emit_task runs the user-thread part of one collective or p2p and hands the rest to the proxy
 * thread, sometimes before the task stop (NCCL's proxy may start early), mostly after. */
static void emit_task(struct comm *c, const struct task *t) {
	struct plug *p = c->p;
	int v = p->v;
	union descr d;
	void *gapi = NULL, *api = NULL, *group = NULL, *task = NULL, *kl = NULL;
	if (v >= 5) {
		d_other(v, &d, NBP_EV_GROUP_API, NULL, c->rank);
		d.v6.groupApi.groupDepth = 1;
		p->start(c->ctx, &gapi, &d);
		d_other(v, &d, t->is_p2p ? NBP_EV_P2P_API : NBP_EV_COLL_API, gapi, c->rank);
		d.v6.collApi.func = func_names[t->func];
		d.v6.collApi.count = t->count;
		d.v6.collApi.datatype = "ncclFloat32";
		p->start(c->ctx, &api, &d);
		if (gapi) p->record(gapi, NBP_ST_GROUP_START_API_STOP, NULL);
		c->events += 3;
	}
	d_other(v, &d, NBP_EV_GROUP, NULL, c->rank);
	p->start(c->ctx, &group, &d);
	d_task(v, &d, t, api, group, c->rank);
	p->start(c->ctx, &task, &d);
	c->events += 2;
	if (v >= 5) {
		if (api) p->stop(api);
		d_other(v, &d, NBP_EV_KERNEL_LAUNCH, gapi, c->rank);
		p->start(c->ctx, &kl, &d);
		if (kl) p->stop(kl);
		c->events += 3;
	}
	struct work w = {.handle = task, .t = *t, .mask = c->mask};
	int early = (rand_r(&c->seed) % 8) == 0;
	if (early) q_push(c, &w);
	if (task) p->stop(task);
	if (group) p->stop(group);
	c->events += 2;
	if (v >= 5) {
		if (gapi) p->record(gapi, NBP_ST_GROUP_END_API_START, NULL);
		if (gapi) p->stop(gapi);
		c->events += 2;
	}
	if (!early) q_push(c, &w);
}

/* ---- recording programs (native C functions in the shim's slots) ----------------------------------- */

#define REC_MAX (1 << 18)
static struct ncclbpf_prof_ctx rec[NCCLBPF_PROF_NUM_HOOKS][REC_MAX];
static _Atomic uint32_t rec_n[NCCLBPF_PROF_NUM_HOOKS];

static uint64_t rec_prog(void *ctx) {
	const struct ncclbpf_prof_ctx *c = ctx;
	uint32_t h = c->event < NCCLBPF_PROF_NUM_HOOKS ? c->event : 0;
	uint32_t i = atomic_fetch_add(&rec_n[h], 1);
	if (i < REC_MAX) rec[h][i] = *c;
	return 0;
}

static void rec_reset(void) {
	for (int h = 0; h < NCCLBPF_PROF_NUM_HOOKS; h++) atomic_store(&rec_n[h], 0);
}

/* ---- scenario: events ------------------------------------------------------------------------------ */

#define EV_COMMS 4
#define EV_COLLS 300
#define EV_P2PS 100

struct ev_arg {
	struct comm *c;
	int ncoll, np2p;
};

static uint64_t ev_gpu_ns(int i) { return 20000 + (uint64_t)(i % 7) * 1000; }

static void *ev_user(void *arg) {
	struct ev_arg *a = arg;
	struct comm *c = a->c;
	for (int i = 0; i < a->ncoll + a->np2p; i++) {
		struct task t = {0};
		if (i % 4 == 3 && i / 4 < a->np2p) {
			t.is_p2p = 1;
			t.func = (i / 4) % 2 ? 6 : 7;
			t.peer = (c->rank + 1) % c->nranks;
			t.nch = 1 + (i % 2);
			t.count = 1024;
		} else {
			t.seq = (uint64_t)i;
			t.func = 4;
			t.algo = i % 2;
			t.proto = i % 3;
			t.nch = 1 + (i % 5);
			t.count = 256u << (i % 10);
		}
		t.gpu_ns = ev_gpu_ns(i);
		t.net = (i % 3) == 0;
		t.nsteps = 3;
		emit_task(c, &t);
	}
	return NULL;
}

static int find_children(int hook, uint64_t comm_id, int rank, uint64_t seq, int func, uint64_t *max_end) {
	int n = 0;
	uint32_t cnt = atomic_load(&rec_n[hook]);
	for (uint32_t i = 0; i < cnt && i < REC_MAX; i++) {
		struct ncclbpf_prof_ctx *k = &rec[hook][i];
		if (k->comm_id == comm_id && k->rank == rank && k->seq == seq && k->func == func && !(k->flags & NCCLBPF_PROF_F_ORPHAN)) {
			n++;
			if (k->end_ns > *max_end) *max_end = k->end_ns;
		}
	}
	return n;
}

/* light: no kernel_ch_end program, so the shim keeps kernel channels in their tasks (no event of
 * their own): the tasks' channel counts, GPU spans and end times must be the same. */
static int run_events(const char *lib, int light) {
	for (int v = 6; v >= 1; v--) {
		struct plug p;
		if (plug_open(&p, lib, v) != 0) return 2;
		if (!p.publish || !p.refresh || !p.stats) {
			fprintf(stderr, "%s exports no ncclbpf_prof_publish/refresh_mask/get_stats\n", lib);
			return 2;
		}
		int mask = 0x7fff; /* NCCL's global mask; init must overwrite it */
		struct comm cs[EV_COMMS];
		/* Publish after the first init: the plugin's own policy load runs there. */
		if (comm_open(&cs[0], &p, 0x1000, 0, EV_COMMS, &mask) != 0) return 2;
		for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++)
			p.publish(h, light && h == NCCLBPF_PROF_KERNEL_CH_END ? 0 : (uintptr_t)rec_prog);
		int m = p.refresh();
		int want = NBP_EV_COLL | NBP_EV_P2P | NBP_EV_PROXY_OP | NBP_EV_PROXY_STEP | (v >= 3 ? NBP_EV_KERNEL_CH : 0);
		CHECK(m == want && mask == want, "v%d: mask %#x (stored %#x), want %#x", v, mask, m, want);
		cs[0].mask = mask;
		/* Same commId on all four, as with ncclCommInitAll: ranks tell them apart. */
		for (int i = 1; i < EV_COMMS; i++)
			if (comm_open(&cs[i], &p, 0x1000, i, EV_COMMS, &mask) != 0) return 2;
		rec_reset();
		struct ncclbpf_prof_stats st0;
		p.stats(&st0);
		pthread_t th[EV_COMMS];
		struct ev_arg args[EV_COMMS];
		uint64_t t0 = now_ns();
		for (int i = 0; i < EV_COMMS; i++) {
			args[i] = (struct ev_arg){&cs[i], EV_COLLS, EV_P2PS};
			pthread_create(&th[i], NULL, ev_user, &args[i]);
		}
		for (int i = 0; i < EV_COMMS; i++) pthread_join(th[i], NULL);
		struct ncclbpf_prof_stats st;
		for (int i = 0; i < EV_COMMS; i++) {
			pthread_mutex_lock(&cs[i].mu);
			cs[i].closing = 1;
			pthread_cond_broadcast(&cs[i].cv);
			pthread_mutex_unlock(&cs[i].mu);
			pthread_join(cs[i].proxy, NULL);
		}
		p.stats(&st);
		uint64_t t1 = now_ns();

		/* Counts. */
		int ncoll = 0, np2p = 0, nkch = 0, nops = 0;
		for (int i = 0; i < EV_COLLS + EV_P2PS; i++) {
			int is_p2p = (i % 4 == 3 && i / 4 < EV_P2PS);
			int nch = is_p2p ? 1 + (i % 2) : 1 + (i % 5);
			if (is_p2p) np2p++; else ncoll++;
			if (v >= 3) nkch += nch;
			if (i % 3 == 0) nops += 2 * nch;
		}
		ncoll *= EV_COMMS, np2p *= EV_COMMS, nkch *= EV_COMMS, nops *= EV_COMMS;
		CHECK((int)rec_n[NCCLBPF_PROF_COLL_END] == ncoll, "v%d: coll_end ran %u times, want %d", v, rec_n[1], ncoll);
		CHECK((int)rec_n[NCCLBPF_PROF_P2P_END] == np2p, "v%d: p2p_end ran %u times, want %d", v, rec_n[2], np2p);
		CHECK((int)rec_n[NCCLBPF_PROF_KERNEL_CH_END] == (light ? 0 : nkch), "v%d: kernel_ch_end ran %u times, want %d", v,
		      rec_n[3], light ? 0 : nkch);
		CHECK((int)rec_n[NCCLBPF_PROF_PROXY_OP_END] == nops, "v%d: proxy_op_end ran %u times, want %d", v, rec_n[4], nops);
		/* Orphans: with v1-v3 a p2p has no channel count, and with v1/v2 nothing tells a task to wait
		 * for children at all, so children that start after the task stop find it completed. */
		uint64_t orphans = st.orphans - st0.orphans;
		CHECK(st.events_dropped == st0.events_dropped && st.events_forced == st0.events_forced && (v <= 3 || orphans == 0),
		      "v%d: dropped %llu forced %llu orphans %llu", v, (unsigned long long)(st.events_dropped - st0.events_dropped),
		      (unsigned long long)(st.events_forced - st0.events_forced), (unsigned long long)orphans);

		/* Identity, hierarchy and times of every collective. */
		uint32_t n = rec_n[NCCLBPF_PROF_COLL_END];
		for (uint32_t k = 0; k < n && k < REC_MAX; k++) {
			struct ncclbpf_prof_ctx *e = &rec[NCCLBPF_PROF_COLL_END][k];
			int i = (int)e->seq;
			CHECK(e->event == NCCLBPF_PROF_COLL_END && e->abi_version == (uint32_t)v, "v%d: coll event/abi %u/%u", v, e->event, e->abi_version);
			CHECK(e->func == 4 && e->algorithm == i % 2 && e->protocol == i % 3 && e->n_channels == 1 + i % 5,
			      "v%d seq %d: identity func %d algo %d proto %d nch %d", v, i, e->func, e->algorithm, e->protocol, e->n_channels);
			CHECK(e->bytes == (uint64_t)(256u << (i % 10)) * 4, "v%d seq %d: bytes %llu", v, i, (unsigned long long)e->bytes);
			/* comm_id and n_ranks per version: internal/ncclabi/ctxfill, checked by "fill" */
			CHECK(e->end_ns >= e->start_ns && e->duration_ns == e->end_ns - e->start_ns && e->start_ns >= t0 && e->end_ns <= t1,
			      "v%d seq %d: times %llu..%llu", v, i, (unsigned long long)e->start_ns, (unsigned long long)e->end_ns);
			if (v >= 3) {
				CHECK(e->n_children == 1 + i % 5, "v%d seq %d: %d kernel channels completed, want %d", v, i, e->n_children, 1 + i % 5);
				uint64_t kend = 0;
				int kids = light ? 1 + i % 5 : find_children(NCCLBPF_PROF_KERNEL_CH_END, e->comm_id, e->rank, e->seq, 4, &kend);
				CHECK(kids == 1 + i % 5, "v%d seq %d rank %d: %d kernel_ch_end records", v, i, e->rank, kids);
				CHECK(e->end_ns >= kend, "v%d seq %d: collective ends before its last channel", v, i);
			}
			if (i % 3 == 0 && v >= 3) {
				uint64_t oend = 0;
				int ops = find_children(NCCLBPF_PROF_PROXY_OP_END, e->comm_id, e->rank, e->seq, 4, &oend);
				CHECK(ops == 2 * (1 + i % 5), "v%d seq %d: %d proxy ops", v, i, ops);
				CHECK(e->end_ns >= oend, "v%d seq %d: collective ends before its last proxy op", v, i);
			}
			if (v >= 4) {
				CHECK((e->flags & NCCLBPF_PROF_F_GPU_TIMED) && e->gpu_duration_ns == ev_gpu_ns(i),
				      "v%d seq %d: gpu %llu flags %#x, want %llu", v, i, (unsigned long long)e->gpu_duration_ns, e->flags,
				      (unsigned long long)ev_gpu_ns(i));
			} else {
				CHECK(!(e->flags & NCCLBPF_PROF_F_GPU_TIMED) && e->gpu_duration_ns == 0, "v%d: gpu time without timers", v);
				CHECK(((e->flags & NCCLBPF_PROF_F_HOST_ONLY) != 0) == (v <= 2), "v%d: HOST_ONLY flag %#x", v, e->flags);
			}
		}
		n = rec_n[NCCLBPF_PROF_PROXY_OP_END];
		for (uint32_t k = 0; k < n && k < REC_MAX; k++) {
			struct ncclbpf_prof_ctx *e = &rec[NCCLBPF_PROF_PROXY_OP_END][k];
			CHECK(e->n_children == 3 && (e->is_send == 0 || e->is_send == 1) && e->channel_id >= 0,
			      "v%d: proxy op steps %d is_send %d ch %d", v, e->n_children, e->is_send, e->channel_id);
			CHECK(e->xfer_bytes == (v >= 4 ? 3 * 4096u : 0), "v%d: proxy op xfer %llu", v, (unsigned long long)e->xfer_bytes);
		}
		n = rec_n[NCCLBPF_PROF_P2P_END];
		for (uint32_t k = 0; k < n && k < REC_MAX; k++) {
			struct ncclbpf_prof_ctx *e = &rec[NCCLBPF_PROF_P2P_END][k];
			CHECK((e->func == 6 || e->func == 7) && e->peer == (e->rank + 1) % EV_COMMS && e->bytes == 4096,
			      "v%d: p2p func %d peer %d bytes %llu", v, e->func, e->peer, (unsigned long long)e->bytes);
		}
		uint64_t calls = 0;
		for (int i = 0; i < EV_COMMS; i++) calls += cs[i].events + cs[i].proxy_events;
		printf("v%d%s: %d communicators on threads, %d collectives, %d p2p, %d kernel channels, %d proxy ops, "
		       "%llu plugin calls: all paired (%llu orphan children)\n",
		       v, light ? " (channels kept in their tasks)" : "", EV_COMMS, ncoll, np2p, nkch, nops, (unsigned long long)calls, (unsigned long long)orphans);
		for (int i = 0; i < EV_COMMS; i++) cs[i].p->finalize(cs[i].ctx);
		for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++) p.publish(h, 0);
		/* NCCL keeps the library open while communicators exist; here each version is closed. */
	}
	return failures ? 1 : 0;
}

/* ---- scenario: mask ---------------------------------------------------------------------------- */

static int run_mask(const char *lib) {
	for (int v = 6; v >= 1; v--) {
		struct plug p;
		if (plug_open(&p, lib, v) != 0) return 2;
		int mask = 0x7fff;
		void *ctx = NULL;
		CHECK(plug_init(&p, &ctx, 0x2000, &mask, 2, 0) == 0 && ctx != NULL, "v%d: init failed", v);
		CHECK(mask == 0, "v%d: no profiler program, yet the mask is %#x", v, mask);
		/* An event that arrives anyway (mask raced) is harmless. */
		union descr d;
		struct task t = {.func = 4, .nch = 2, .count = 8};
		void *h = NULL;
		d_task(v, &d, &t, NULL, NULL, 0);
		p.start(ctx, &h, &d);
		if (h) p.stop(h);
		p.finalize(ctx);
		printf("v%d: mask %#x with no profiler program\n", v, mask);
	}
	return failures ? 1 : 0;
}

/* fill: for every exported version, one collective (one channel, with proxy operations) and one send on
 * a 2-rank communicator, with inputs that differ from every default; prints, per hook, what NCCL of that
 * version passed for each context field of its event ("nccl:V:HOOK FIELD VALUE") and the context the
 * recording program saw ("ctx:V:HOOK FIELD VALUE"). Which fields each version provides is
 * internal/ncclabi/ctxfill's to say: the Go test compares. Kernel channels and proxy operations are
 * printed from v4 on, where NCCL ties them to their task reliably (see run_events' orphans). */
static uint32_t fnv1a(const char *s);
static void drain(struct comm *c);
#define FILL_P(kind, v, hook, name, val) printf("%s:%d:%s %s %lld\n", kind, v, hook, name, (long long)(val))
static void fill_print(int v, const char *hook, const struct ncclbpf_prof_ctx *e) {
#define F(m) FILL_P("ctx", v, hook, #m, e->m)
	F(comm_id); F(seq); F(local_seq); F(bytes); F(rank); F(n_ranks); F(func); F(algorithm); F(protocol);
	F(n_channels); F(peer); F(channel_id); F(start_ns); F(end_ns); F(duration_ns); F(gpu_duration_ns);
	F(xfer_bytes); F(n_children); F(is_send); F(event); F(flags); F(abi_version); F(reserved); F(user_tag);
	F(kernel_variant); F(is_sym_coll); F(phase_id); F(reserved2);
#undef F
}

static int run_fill(const char *lib) {
	const char *hooks[] = {"", "coll_end", "p2p_end", "kernel_ch_end", "proxy_op_end"};
	for (int v = 1; v <= 7; v++) {
		struct plug p;
		if (plug_open(&p, lib, v) != 0) return 2;
		int mask = 0;
		struct comm c;
		const uint64_t comm_id = 0x7000 + (uint64_t)v;
		const int rank = 1, nranks = 2;
		if (comm_open(&c, &p, comm_id, rank, nranks, &mask) != 0) return 2;
		for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++) p.publish(h, (uintptr_t)rec_prog);
		p.refresh();
		c.mask = mask;
		rec_reset();
		struct task coll = {.seq = 77, .func = 4, .algo = 1, .proto = 2, .nch = 1, .count = 1000, .gpu_ns = 23000,
		                    .net = 1, .nsteps = 3, .user_tag = 0xabc0000000000001ull,
		                    .variant = "AllReduce_RING_SIMPLE_sym", .sym = 1};
		struct task send = {.is_p2p = 1, .func = 6, .peer = 0, .nch = 1, .count = 256, .gpu_ns = 9000, .user_tag = 42};
		emit_task(&c, &coll);
		drain(&c);
		emit_task(&c, &send);
		comm_close(&c);
		for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++) p.publish(h, 0);
		/* what NCCL passed, by the field of each hook's context it stands for */
		for (int h = 1; h <= 4; h++) {
			if ((h == NCCLBPF_PROF_KERNEL_CH_END || h == NCCLBPF_PROF_PROXY_OP_END) && v < 4) continue;
			const struct task *t = h == NCCLBPF_PROF_P2P_END ? &send : &coll;
			if (v >= 4) {
				FILL_P("nccl", v, hooks[h], "comm_id", comm_id);
				FILL_P("nccl", v, hooks[h], "n_ranks", nranks);
			}
			FILL_P("nccl", v, hooks[h], "rank", rank);
			FILL_P("nccl", v, hooks[h], "func", t->func);
			FILL_P("nccl", v, hooks[h], "bytes", (uint64_t)t->count * 4);
			if (!t->is_p2p) {
				FILL_P("nccl", v, hooks[h], "seq", t->seq);
				FILL_P("nccl", v, hooks[h], "algorithm", t->algo);
				FILL_P("nccl", v, hooks[h], "protocol", t->proto);
			}
			if (!t->is_p2p || v >= 4) FILL_P("nccl", v, hooks[h], "n_channels", t->nch);
			if (t->is_p2p) FILL_P("nccl", v, hooks[h], "peer", t->peer);
			if (v >= 4 && h != NCCLBPF_PROF_PROXY_OP_END) FILL_P("nccl", v, hooks[h], "gpu_duration_ns", t->gpu_ns);
			if (v == 7) {
				FILL_P("nccl", v, hooks[h], "user_tag", t->user_tag);
				if (!t->is_p2p) {
					FILL_P("nccl", v, hooks[h], "kernel_variant", fnv1a(t->variant));
					FILL_P("nccl", v, hooks[h], "is_sym_coll", t->sym);
				}
			}
			if (h == NCCLBPF_PROF_KERNEL_CH_END) FILL_P("nccl", v, hooks[h], "channel_id", 0);
			if (h == NCCLBPF_PROF_PROXY_OP_END) {
				FILL_P("nccl", v, hooks[h], "channel_id", 0);
				FILL_P("nccl", v, hooks[h], "peer", (rank + 1) % nranks); /* the send side */
				FILL_P("nccl", v, hooks[h], "is_send", 1);
				FILL_P("nccl", v, hooks[h], "xfer_bytes", (uint64_t)t->nsteps * 4096);
			}
			/* what the program saw: the collective's, the send's, channel 0 of the collective, its send-side op */
			const struct ncclbpf_prof_ctx *seen = NULL;
			for (uint32_t i = 0; i < rec_n[h] && i < REC_MAX && !seen; i++)
				if (h != NCCLBPF_PROF_PROXY_OP_END || rec[h][i].is_send == 1) seen = &rec[h][i];
			CHECK(seen != NULL, "v%d: hook %s never ran", v, hooks[h]);
			if (seen) fill_print(v, hooks[h], seen);
		}
	}
	return failures ? 1 : 0;
}

/* v7: coll_end and p2p_end programs run under v7 and v6 with whatever v7 fields the version has; the
 * mask never asks for kernel phases (no hook reads them), and a kernel-phase event that comes anyway
 * gets no handle. */
static uint64_t v7_tag[2];
static uint32_t v7_variant, v7_sym, v7_abi;
static int v7_runs;
static uint64_t v7_prog(void *ctx) {
	const struct ncclbpf_prof_ctx *c = ctx;
	if (c->event == NCCLBPF_PROF_COLL_END) {
		v7_tag[0] = c->user_tag;
		v7_variant = c->kernel_variant;
		v7_sym = c->is_sym_coll;
	} else {
		v7_tag[1] = c->user_tag;
	}
	v7_abi = c->abi_version;
	v7_runs++;
	return 0;
}

static uint32_t fnv1a(const char *s) {
	uint32_t h = 2166136261u;
	for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
	return h ? h : 1;
}

static int run_v7(const char *lib) {
	for (int v = 7; v >= 6; v--) {
		struct plug p;
		if (plug_open(&p, lib, v) != 0) return 2;
		int mask = 0;
		void *ctx = NULL;
		CHECK(plug_init(&p, &ctx, 0x7000, &mask, 2, 0) == 0 && ctx != NULL, "v%d: init failed", v);
		/* A program that reads no time and no children (as the verifier would find of v7_prog). */
		uintptr_t (*publish_needs)(int, uintptr_t, uint32_t) =
		    (uintptr_t(*)(int, uintptr_t, uint32_t))dlsym(p.lib, "ncclbpf_prof_publish_needs");
		CHECK(publish_needs != NULL, "no ncclbpf_prof_publish_needs");
		if (!publish_needs) return 1;
		publish_needs(NCCLBPF_PROF_COLL_END, (uintptr_t)v7_prog, 0);
		publish_needs(NCCLBPF_PROF_P2P_END, (uintptr_t)v7_prog, 0);
		mask = p.refresh();
		CHECK(mask == (NBP_EV_COLL | NBP_EV_P2P), "v%d: mask %#x, want Coll|P2p only", v, mask);
		CHECK(!(mask & NBP_EV_KERNEL_PHASE), "v%d: mask asks for kernel phases", v);
		memset(v7_tag, 0xff, sizeof v7_tag);
		v7_variant = v7_sym = 0xffffffffu;
		v7_runs = 0;
		union descr d;
		void *h = NULL;
		struct task coll = {.func = 4, .algo = 1, .proto = 2, .nch = 2, .count = 1024, .seq = 1};
		d_task(v, &d, &coll, NULL, NULL, 0);
		if (v == 7) {
			d.v7.coll.userTag = 0xabc0000000000001ull;
			d.v7.coll.kernelVariant = "ReduceScatter_LL_sym";
			d.v7.coll.isSymColl = true;
		}
		p.start(ctx, &h, &d);
		CHECK(h != NULL, "v%d: no handle for a collective", v);
		if (h) p.stop(h);
		struct task p2p = {.is_p2p = 1, .func = 6, .nch = 1, .count = 256, .peer = 1};
		d_task(v, &d, &p2p, NULL, NULL, 0);
		if (v == 7) d.v7.p2p.userTag = 42;
		h = NULL;
		p.start(ctx, &h, &d);
		if (h) p.stop(h);
		d_head(v, &d, NBP_EV_KERNEL_PHASE, NULL, 0);
		d.v7.kernelPhase.phaseId = 1;
		d.v7.kernelPhase.phaseName = "compute";
		h = (void *)1;
		p.start(ctx, &h, &d);
		CHECK(h == NULL, "v%d: a kernel-phase event got a handle", v);
		CHECK(v7_runs == 2, "v%d: %d program runs, want 2", v, v7_runs);
		CHECK(v7_abi == (uint32_t)v, "v%d: abi_version %u", v, v7_abi);
		/* Which version carries the user tag, variant and symmetric flag is internal/ncclabi/ctxfill's to
		 * say ("fill" checks it); here the values only show the program ran with them. */
		p.publish(NCCLBPF_PROF_COLL_END, 0);
		p.publish(NCCLBPF_PROF_P2P_END, 0);
		p.finalize(ctx);
		printf("v%d: user tag %#llx/%llu, variant %#x, symmetric %u, mask %#x\n", v, (unsigned long long)v7_tag[0],
		       (unsigned long long)v7_tag[1], v7_variant, v7_sym, mask);
	}
	if (!failures) printf("v7 fields: ok\n");
	return failures ? 1 : 0;
}

/* phase: the kernel_phase_end hook (profiler ABI v7). Without a kernel_phase_end program the mask
 * is what the other programs ask for, under v7 as under v6; with one, v7 also asks for kernel phases
 * and the collectives and kernel channels that are their parents, and each phase reaches the program
 * with its collective's identity, its channel, its phase id and its GPU span; v6 (no phases) keeps
 * the mask it had. Unpublishing the program restores the mask. Both parent shapes: channels kept in
 * their task (no kernel_ch_end program) and channels with events of their own. */
#define PH_CH 2
#define PH_N 3
static struct ncclbpf_prof_ctx ph_rec[2 * PH_CH * PH_N + 4];
static _Atomic int ph_n, ph_colls;
static uint64_t ph_prog(void *ctx) {
	const struct ncclbpf_prof_ctx *c = ctx;
	if (c->event == NCCLBPF_PROF_KERNEL_PHASE_END) {
		int i = atomic_fetch_add(&ph_n, 1);
		if (i < (int)(sizeof ph_rec / sizeof ph_rec[0])) ph_rec[i] = *c;
	} else if (c->event == NCCLBPF_PROF_COLL_END) {
		atomic_fetch_add(&ph_colls, 1);
	}
	return 0;
}

static int run_phase(const char *lib) {
	for (int v = 7; v >= 6; v--) {
		struct plug p;
		if (plug_open(&p, lib, v) != 0) return 2;
		uintptr_t (*publish_needs)(int, uintptr_t, uint32_t) =
		    (uintptr_t(*)(int, uintptr_t, uint32_t))dlsym(p.lib, "ncclbpf_prof_publish_needs");
		CHECK(publish_needs != NULL, "no ncclbpf_prof_publish_needs");
		if (!publish_needs) return 1;
		int mask = 0;
		void *ctx = NULL;
		CHECK(plug_init(&p, &ctx, 0x7100, &mask, 2, 0) == 0 && ctx != NULL, "v%d: init failed", v);
		/* a counter of collectives: its mask, without and with the phase program */
		publish_needs(NCCLBPF_PROF_COLL_END, (uintptr_t)ph_prog, 0);
		int base = p.refresh();
		CHECK(base == NBP_EV_COLL, "v%d: mask %#x for a collective counter, want Coll only", v, base);
		publish_needs(NCCLBPF_PROF_KERNEL_PHASE_END, (uintptr_t)ph_prog, 0);
		mask = p.refresh();
		int want = v >= 7 ? NBP_EV_COLL | NBP_EV_KERNEL_CH | NBP_EV_KERNEL_PHASE : base;
		CHECK(mask == want, "v%d: mask %#x with a kernel_phase_end program, want %#x", v, mask, want);
		for (int full = 0; full <= 1; full++) {
			/* full: a kernel_ch_end program, so channels are events of their own */
			publish_needs(NCCLBPF_PROF_KERNEL_CH_END, full ? (uintptr_t)ph_prog : 0, 0);
			mask = p.refresh();
			atomic_store(&ph_n, 0);
			atomic_store(&ph_colls, 0);
			union descr d;
			struct task coll = {.func = 4, .algo = 1, .proto = 2, .nch = PH_CH, .count = 4096, .seq = 9};
			d_task(v, &d, &coll, NULL, NULL, 0);
			void *t = NULL;
			p.start(ctx, &t, &d);
			CHECK(t != NULL, "v%d: no handle for the collective", v);
			p.stop(t); /* enqueued: NCCL stops the task before its kernel runs */
			int got = 0;
			for (int ch = 0; ch < PH_CH; ch++) {
				void *k = NULL;
				d_kch(v, &d, t, ch, 1000000);
				p.start(ctx, &k, &d);
				if (v >= 7) CHECK(k != NULL, "v7 full=%d: channel %d got no handle", full, ch);
				for (int ph = 0; ph < PH_N; ph++) {
					d_head(v, &d, NBP_EV_KERNEL_PHASE, k, 0);
					d.v7.kernelPhase.channelId = (uint8_t)ch;
					d.v7.kernelPhase.phaseId = (uint8_t)ph;
					d.v7.kernelPhase.phaseName = ph == 0 ? "initial_sync" : ph == 1 ? "compute" : "final_sync";
					d.v7.kernelPhase.pTimer = 1000000 + (uint64_t)ph * 1000;
					void *h = NULL;
					p.start(ctx, &h, &d);
					if (h) {
						got++;
						nbp_state_args_v6_t a = {0};
						a.kernelCh.pTimer = 1000000 + (uint64_t)ph * 1000 + 100 * (uint64_t)(ph + 1);
						p.record(h, NBP_ST_KERNEL_PHASE_STOP, &a);
						p.stop(h);
					}
				}
				if (k) {
					nbp_state_args_v6_t a = {0};
					a.kernelCh.pTimer = 1005000;
					p.record(k, NBP_ST_KERNEL_CH_STOP, &a);
					p.stop(k);
				}
			}
			int n = atomic_load(&ph_n);
			if (v >= 7) {
				CHECK(got == PH_CH * PH_N && n == PH_CH * PH_N, "v7 full=%d: %d phase handles, %d runs, want %d", full,
				      got, n, PH_CH * PH_N);
				for (int i = 0; i < n && i < PH_CH * PH_N; i++) {
					const struct ncclbpf_prof_ctx *c = &ph_rec[i];
					int ph = i % PH_N, ch = i / PH_N;
					CHECK(c->phase_id == ph && c->channel_id == ch, "v7 full=%d: run %d phase %d channel %d", full, i,
					      c->phase_id, c->channel_id);
					CHECK(c->gpu_duration_ns == 100 * (uint64_t)(ph + 1) && (c->flags & NCCLBPF_PROF_F_GPU_TIMED),
					      "v7 full=%d: phase %d gpu span %llu flags %#x", full, ph, (unsigned long long)c->gpu_duration_ns,
					      c->flags);
					CHECK(c->func == 4 && c->seq == 9 && c->bytes == 4096 * 4 && c->algorithm == 1 && c->protocol == 2 &&
					          !(c->flags & NCCLBPF_PROF_F_ORPHAN),
					      "v7 full=%d: phase identity func %d seq %llu bytes %llu algo %d proto %d flags %#x", full,
					      c->func, (unsigned long long)c->seq, (unsigned long long)c->bytes, c->algorithm, c->protocol,
					      c->flags);
				}
				/* the collective completes after its channels and their phases */
				CHECK(atomic_load(&ph_colls) == 1, "v7 full=%d: coll_end ran %d times", full, atomic_load(&ph_colls));
			} else {
				CHECK(got == 0 && n == 0, "v6: %d phase handles, %d runs", got, n);
			}
		}
		publish_needs(NCCLBPF_PROF_KERNEL_CH_END, 0, 0);
		publish_needs(NCCLBPF_PROF_KERNEL_PHASE_END, 0, 0);
		mask = p.refresh();
		CHECK(mask == base, "v%d: mask %#x after the phase program left, want %#x", v, mask, base);
		p.publish(NCCLBPF_PROF_COLL_END, 0);
		p.finalize(ctx);
		printf("v%d: mask %#x without a kernel_phase_end program, %#x with one\n", v, base, want);
	}
	if (!failures) printf("kernel phases: ok\n");
	return failures ? 1 : 0;
}

/* not_loaded reports a bundle whose profiler programs did not reach the shim: exit status 3, with
 * the library's load message (ncclbpf_load_message) for the caller to judge. */
static int not_loaded(struct plug *p, int mask) {
	const char *(*msg)(void) = (const char *(*)(void))dlsym(p->lib, "ncclbpf_load_message");
	printf("NOT LOADED: activation mask %#x; load message: %s\n", mask, msg ? msg() : "(none)");
	return 3;
}

/* maskon: the library's bundle (NCCLBPF_POLICY) has a coll_end program; NCCL initialises the
 * profiler before the tuner, so the profiler's first init must load the bundle and set the mask. */
static int run_maskon(const char *lib) {
	for (int v = 6; v >= 1; v--) {
		struct plug p;
		if (plug_open(&p, lib, v) != 0) return 2;
		int mask = 0;
		void *ctx = NULL;
		CHECK(plug_init(&p, &ctx, 0x6000, &mask, 2, 0) == 0 && ctx != NULL, "v%d: init failed", v);
		if (!(mask & NBP_EV_COLL)) return not_loaded(&p, mask);
		int want = NBP_EV_COLL | (v >= 3 ? NBP_EV_KERNEL_CH : 0);
		CHECK(mask == want, "v%d: mask %#x at the first profiler init, want %#x", v, mask, want);
		p.finalize(ctx);
		printf("v%d: mask %#x at the first profiler init (coll_end program)\n", v, mask);
	}
	return failures ? 1 : 0;
}

/* needs: the library's bundle (NCCLBPF_POLICY) must make every version's init store exactly WANT (the
 * v3+ mask; v1/v2 have no kernel channels), and with v5, 100 collectives and 100 p2p tasks of 2
 * channels each, emitted as NCCL would under that mask, must reach the programs: p2p_end once per
 * p2p task if the mask has P2p, kernel_ch_end once per channel if KCH (1: the bundle has a
 * kernel_ch_end program), none of them without its parent task. */
static int run_needs(const char *lib, int want, int kch_prog) {
	for (int v = 6; v >= 1; v--) {
		struct plug p;
		if (plug_open(&p, lib, v) != 0) return 2;
		int mask = 0;
		struct comm c;
		if (comm_open(&c, &p, 0x8000 + (uint64_t)v, 0, 2, &mask) != 0) return 2;
		if (!mask) return not_loaded(&p, mask);
		int want_v = v >= 3 ? want : want & ~NBP_EV_KERNEL_CH;
		CHECK(mask == want_v, "v%d: activation mask %#x, want %#x", v, mask, want_v);
		if (v == 5) {
			struct ncclbpf_prof_stats st0, st;
			p.stats(&st0);
			const int N = 100;
			for (int i = 0; i < N; i++) {
				struct task t = {.is_p2p = 1, .func = i % 2 ? 6 : 7, .peer = 1, .nch = 2, .count = 1024, .gpu_ns = 1000};
				emit_task(&c, &t);
				struct task u = {.seq = (uint64_t)i, .func = 4, .algo = 1, .proto = 2, .nch = 2, .count = 4096, .gpu_ns = 2000};
				emit_task(&c, &u);
			}
			comm_close(&c);
			p.stats(&st);
			uint64_t np = st.calls[NCCLBPF_PROF_P2P_END] - st0.calls[NCCLBPF_PROF_P2P_END];
			uint64_t nk = st.calls[NCCLBPF_PROF_KERNEL_CH_END] - st0.calls[NCCLBPF_PROF_KERNEL_CH_END];
			uint64_t orph = st.orphans - st0.orphans;
			CHECK(np == (mask & NBP_EV_P2P ? (uint64_t)N : 0), "v5: p2p_end ran %llu times for %d p2p tasks",
			      (unsigned long long)np, N);
			CHECK(nk == (kch_prog ? 4ull * N : 0), "v5: kernel_ch_end ran %llu times for %d channels",
			      (unsigned long long)nk, kch_prog ? 4 * N : 0);
			CHECK(orph == 0, "v5: %llu children without their parent", (unsigned long long)orph);
			printf("v5: mask %#x: %llu p2p_end, %llu kernel_ch_end, %llu orphans\n", mask, (unsigned long long)np,
			       (unsigned long long)nk, (unsigned long long)orph);
		} else
			comm_close(&c);
		printf("v%d: mask %#x as wanted\n", v, mask);
	}
	return failures ? 1 : 0;
}

/* maskreload: one 2-rank communicator (v5) sends a p2p task of 2 channels every millisecond under
 * NCCL's mask as it is at each call (read from the int whose address init got, as NCCL does), and
 * prints "mask M" at start and at each change, "ready PID", until stdin closes; the test reloads
 * bundles through the control socket meanwhile. */
static void *mr_stdin(void *arg) {
	char line[64];
	while (fgets(line, sizeof line, stdin)) {
	}
	atomic_store((_Atomic int *)arg, 1);
	return NULL;
}

static int run_maskreload(const char *lib) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	static int mask; /* NCCL's process-wide mask */
	struct comm c;
	if (comm_open(&c, &p, 0x9000, 0, 2, &mask) != 0) return 2;
	int last = __atomic_load_n(&mask, __ATOMIC_RELAXED);
	printf("mask %#x\nready %d\n", last, (int)getpid());
	fflush(stdout);
	static _Atomic int done;
	pthread_t th;
	pthread_create(&th, NULL, mr_stdin, (void *)&done);
	for (int i = 0; !atomic_load(&done); i++) {
		int m = __atomic_load_n(&mask, __ATOMIC_RELAXED);
		if (m != last) {
			printf("mask %#x\n", m);
			fflush(stdout);
			last = m;
		}
		c.mask = m;
		if (m & NBP_EV_P2P) {
			struct task t = {.is_p2p = 1, .func = i % 2 ? 6 : 7, .peer = 1, .nch = 2, .count = 1024, .gpu_ns = 1000};
			emit_task(&c, &t);
		}
		usleep(1000);
	}
	pthread_join(th, NULL);
	comm_close(&c);
	return failures ? 1 : 0;
}

/* threadexit: threads that complete events keep a few free ones for their next allocations; 200
 * threads that each complete 8 events of one context and exit must not take its pool (512 events)
 * with them: afterwards 470 tasks live at once must all get an event. */
static uint64_t noop_prog(void *ctx);
struct te_arg {
	struct plug *p;
	void *ctx;
};
static void *te_worker(void *arg) {
	struct te_arg *a = arg;
	union descr d;
	void *h[8];
	for (int k = 0; k < 8; k++) {
		struct task t = {.is_p2p = 1, .func = 6, .peer = 1, .nch = 0, .count = 64};
		d_task(5, &d, &t, NULL, NULL, 0);
		h[k] = NULL;
		a->p->start(a->ctx, &h[k], &d);
	}
	for (int k = 0; k < 8; k++)
		if (h[k]) a->p->stop(h[k]);
	return NULL;
}

static int run_threadexit(const char *lib) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	setenv("NCCLBPF_PROF_POOL", "512", 1);
	int mask = 0;
	void *ctx = NULL;
	if (plug_init(&p, &ctx, 0xa000, &mask, 2, 0) != 0) return 2;
	unsetenv("NCCLBPF_PROF_POOL");
	p.publish(NCCLBPF_PROF_P2P_END, (uintptr_t)noop_prog);
	p.refresh();
	struct te_arg a = {&p, ctx};
	for (int i = 0; i < 200; i++) {
		pthread_t th;
		pthread_create(&th, NULL, te_worker, &a);
		pthread_join(th, NULL);
	}
	enum { LIVE = 470 };
	static void *h[LIVE];
	union descr d;
	int got = 0;
	for (int i = 0; i < LIVE; i++) {
		struct task t = {.is_p2p = 1, .func = 7, .peer = 1, .nch = 0, .count = 64};
		d_task(5, &d, &t, NULL, NULL, 0);
		h[i] = NULL;
		p.start(ctx, &h[i], &d);
		got += h[i] != NULL;
	}
	for (int i = 0; i < LIVE; i++)
		if (h[i]) p.stop(h[i]);
	struct ncclbpf_prof_stats st;
	p.stats(&st);
	CHECK(got == LIVE && st.events_dropped == 0, "threadexit: %d of %d live tasks got an event (%llu dropped)", got, LIVE,
	      (unsigned long long)st.events_dropped);
	p.publish(NCCLBPF_PROF_P2P_END, 0);
	p.finalize(ctx);
	printf("threadexit: 200 exited threads, then %d of %d live tasks in a pool of 512\n", got, LIVE);
	return failures ? 1 : 0;
}

/* ---- scenario: no kernel channels ---------------------------------------------------------------- */

/* NCCL sends no KernelCh events for a 1-rank communicator (send/recv to self), although the mask
 * asks for them: the shim must notice and complete such tasks anyway (seen with NCCL 2.28.9). */
static int run_nokch(const char *lib) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	/* Case 1: a 1-rank communicator (the shim knows from init). Case 2: 2 ranks, the shim has to
	 * notice after NCCLBPF_PROF_KCH_WAIT_MS (set to 100 ms here) that no channel ever comes. */
	for (int nranks = 1; nranks <= 2; nranks++) {
		setenv("NCCLBPF_PROF_KCH_WAIT_MS", "100", 1);
		int mask = 0;
		struct comm c;
		if (comm_open(&c, &p, 0x5000 + (uint64_t)nranks, 0, nranks, &mask) != 0) return 2;
		unsetenv("NCCLBPF_PROF_KCH_WAIT_MS");
		for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++) p.publish(h, (uintptr_t)rec_prog);
		c.mask = mask = p.refresh();
		c.no_kch = 1;
		rec_reset();
		const int N = 100;
		int first_batch_done = -1;
		for (int i = 0; i < 2 * N; i++) {
			if (i == N) {
				first_batch_done = (int)rec_n[NCCLBPF_PROF_P2P_END];
				usleep(250000);
			}
			struct task t = {.is_p2p = 1, .func = i % 2 ? 6 : 7, .peer = 0, .nch = 2, .count = 1024, .gpu_ns = 1000};
			emit_task(&c, &t);
		}
		comm_close(&c);
		uint32_t n = rec_n[NCCLBPF_PROF_P2P_END];
		CHECK(n == 2 * N, "nokch %d ranks: p2p_end ran %u times, want %d", nranks, n, 2 * N);
		if (nranks == 1) CHECK(first_batch_done == N, "nokch 1 rank: only %d p2p completed at their stop", first_batch_done);
		int host_only = 0;
		for (uint32_t k = 0; k < n && k < REC_MAX; k++)
			host_only += (rec[NCCLBPF_PROF_P2P_END][k].flags & NCCLBPF_PROF_F_HOST_ONLY) != 0;
		CHECK(host_only == (int)n, "nokch: %d of %u p2p_end without NCCLBPF_PROF_F_HOST_ONLY", (int)n - host_only, n);
		printf("nokch %d rank(s): %u p2p completed without kernel channels (host time only; %d before the wait)\n",
		       nranks, n, first_batch_done);
	}
	return failures ? 1 : 0;
}

static void drain(struct comm *c) {
	for (;;) {
		pthread_mutex_lock(&c->mu);
		int empty = c->head == c->tail;
		pthread_mutex_unlock(&c->mu);
		if (empty) return;
		usleep(20);
	}
}

/* ---- scenario: swap programs under load ------------------------------------------------------- */

/* Two programs alternate in every slot while 4 communicators emit events. After each swap the host
 * calls ncclbpf_prof_synchronize (the grace period the control plane waits for before unmapping old
 * code) and then marks the old program retired: no thread may be inside it any more, nor enter it. */
static _Atomic int sw_inside[2], sw_retired[2];
static _Atomic uint64_t sw_calls[2], sw_violations;

static inline uint64_t sw_body(int k) {
	atomic_fetch_add(&sw_inside[k], 1);
	if (atomic_load(&sw_retired[k])) atomic_fetch_add(&sw_violations, 1);
	for (volatile int i = 0; i < 200; i++) {
	}
	atomic_fetch_add(&sw_calls[k], 1);
	atomic_fetch_sub(&sw_inside[k], 1);
	return 0;
}
static uint64_t sw_prog0(void *ctx) { (void)ctx; return sw_body(0); }
static uint64_t sw_prog1(void *ctx) { (void)ctx; return sw_body(1); }

static _Atomic int sw_stop;
static void *sw_user(void *arg) {
	struct comm *c = arg;
	for (int i = 0; !atomic_load(&sw_stop); i++) {
		struct task t = {.seq = (uint64_t)i, .func = 4, .algo = 1, .proto = 2, .nch = 2, .count = 1024, .gpu_ns = 1000,
		                 .net = (i % 4) == 0, .nsteps = 2};
		emit_task(c, &t);
	}
	return NULL;
}

static int run_swap(const char *lib) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	if (!p.synchronize) {
		fprintf(stderr, "%s exports no ncclbpf_prof_synchronize\n", lib);
		return 2;
	}
	int mask = 0;
	struct comm cs[EV_COMMS];
	if (comm_open(&cs[0], &p, 0x8000, 0, EV_COMMS, &mask) != 0) return 2;
	for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++) p.publish(h, (uintptr_t)sw_prog0);
	cs[0].mask = mask = p.refresh();
	for (int i = 1; i < EV_COMMS; i++)
		if (comm_open(&cs[i], &p, 0x8000, i, EV_COMMS, &mask) != 0) return 2;
	pthread_t th[EV_COMMS];
	for (int i = 0; i < EV_COMMS; i++) pthread_create(&th[i], NULL, sw_user, &cs[i]);
	int cur = 0, swaps = 0, unsupported = 0, inside_after = 0;
	for (int r = 0; r < 200; r++) {
		usleep(2000);
		int next = 1 - cur;
		atomic_store(&sw_retired[next], 0);
		for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++)
			p.publish(h, (uintptr_t)(next ? sw_prog1 : sw_prog0));
		if (p.synchronize() != 0) {
			unsupported = 1;
			break;
		}
		/* Grace period over: nobody may still run `cur`. */
		if (atomic_load(&sw_inside[cur]) != 0) inside_after++;
		atomic_store(&sw_retired[cur], 1);
		cur = next;
		swaps++;
	}
	atomic_store(&sw_stop, 1);
	for (int i = 0; i < EV_COMMS; i++) pthread_join(th[i], NULL);
	for (int i = 0; i < EV_COMMS; i++) comm_close(&cs[i]);
	if (unsupported) {
		printf("swap: ncclbpf_prof_synchronize reports no membarrier here: old code would never be freed\n");
		return failures ? 1 : 0;
	}
	CHECK(inside_after == 0 && sw_violations == 0, "swap: %d grace periods ended with a thread inside old code, %llu entries into retired code",
	      inside_after, (unsigned long long)sw_violations);
	CHECK(sw_calls[0] > 0 && sw_calls[1] > 0, "swap: programs not called (%llu, %llu)", (unsigned long long)sw_calls[0],
	      (unsigned long long)sw_calls[1]);
	printf("swap: %d swaps of all 4 profiler slots under load, %llu program calls, 0 calls into retired code\n", swaps,
	       (unsigned long long)(sw_calls[0] + sw_calls[1]));
	return failures ? 1 : 0;
}

/* ---- scenario: stuck tasks ---------------------------------------------------------------------- */

/* A task announces channels of which NCCL reports only some (as could happen if a version counts a
 * send/recv pair's channels differently): the task must not leak. With a pool of 64 events and a
 * reclaim age of 50 ms, such tasks are completed by the sweep/reclaim with NCCLBPF_PROF_F_FORCED
 * and everything else keeps flowing. */
static int run_stuck(const char *lib) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	setenv("NCCLBPF_PROF_POOL", "64", 1);
	setenv("NCCLBPF_PROF_RECLAIM_MS", "50", 1);
	int mask = 0;
	struct comm c;
	if (comm_open(&c, &p, 0x7000, 0, 2, &mask) != 0) return 2;
	unsetenv("NCCLBPF_PROF_POOL");
	unsetenv("NCCLBPF_PROF_RECLAIM_MS");
	for (int h = NCCLBPF_PROF_FIRST_HOOK; h <= NCCLBPF_PROF_LAST_HOOK; h++) p.publish(h, (uintptr_t)rec_prog);
	c.mask = mask = p.refresh();
	rec_reset();
	struct ncclbpf_prof_stats st0, st;
	p.stats(&st0);
	const int S = 20, N = 400;
	c.kch_max = 1;
	for (int i = 0; i < S; i++) {
		struct task t = {.is_p2p = 1, .func = 6, .peer = 1, .nch = 2, .count = 1024, .gpu_ns = 1000};
		emit_task(&c, &t);
	}
	drain(&c);
	c.kch_max = 0;
	usleep(100000);
	for (int i = 0; i < N; i++) {
		struct task t = {.seq = (uint64_t)i, .func = 4, .algo = 1, .proto = 2, .nch = 2, .count = 1024, .gpu_ns = 5000};
		emit_task(&c, &t);
		if (i % 8 == 7) drain(&c);
	}
	comm_close(&c);
	p.stats(&st);
	uint32_t np = rec_n[NCCLBPF_PROF_P2P_END], nc = rec_n[NCCLBPF_PROF_COLL_END];
	int forced = 0;
	for (uint32_t k = 0; k < np && k < REC_MAX; k++) forced += (rec[NCCLBPF_PROF_P2P_END][k].flags & NCCLBPF_PROF_F_FORCED) != 0;
	CHECK(np == S && forced == S, "stuck: %u p2p_end (%d forced), want %d forced", np, forced, S);
	CHECK(nc == N, "stuck: coll_end ran %u times, want %d", nc, N);
	CHECK(st.events_forced - st0.events_forced == (uint64_t)S && st.events_dropped == st0.events_dropped,
	      "stuck: forced %llu dropped %llu", (unsigned long long)(st.events_forced - st0.events_forced),
	      (unsigned long long)(st.events_dropped - st0.events_dropped));
	printf("stuck: %d tasks missing a channel completed as forced, %u collectives after them, pool of 64\n", forced, nc);
	return failures ? 1 : 0;
}

/* ---- scenario: closed loop ------------------------------------------------------------------------ */

typedef struct {
	const char *name;
	int (*init)(void **, uint64_t, size_t, size_t, void *, void *, void *);
	int (*getCollInfo)(void *, int, size_t, int, float **, int, int, int, int *);
	int (*finalize)(void *);
} host_tuner_v5_t;

/* The candidates of policies/adaptive/adaptive.h: index a*6 + p*2 + c. */
static void cand_of(int i, int *algo, int *proto, int *nch) {
	*algo = i / 6;
	*proto = (i / 2) % 3;
	*nch = (i % 2) ? 16 : 4;
}

static uint64_t best_time(const struct model *m, uint64_t bytes, int *best) {
	uint64_t bt = UINT64_MAX;
	for (int i = 0; i < ADAPTIVE_NCAND_HOST; i++) {
		int a, q, n;
		cand_of(i, &a, &q, &n);
		uint64_t t = model_ns(m, a, q, n, bytes);
		if (t < bt) bt = t, *best = i;
	}
	return bt;
}

#define LOOP_CALLS 8000
#define LOOP_SIZES 4
/* Stated bounds, in calls of one size bucket, every call counted (exploration included): the
 * policy's defaults (an exploration window of 96 communicator calls = 24 per bucket here, then
 * candidates with fewer than 3 agreed samples), an agreement every 64 calls activated 8 calls later,
 * measurements drained at each agreement point. */
#define LOOP_CONVERGE_BOUND 96
#define LOOP_RECOVER_BOUND 64
#define LOOP_AGREE_EVERY 64
#define LOOP_AGREE_LAG 8
static const uint64_t loop_bytes[LOOP_SIZES] = {1024, 8192, 65536, 16u << 20};

/* Options of run_loop for the multi-rank scenario: this rank's measured times are off by skew_pct %
 * (systematically) and get independent noise of +-noise_pct % (seeded by the rank); the decision of
 * every call is written to fd as 3 bytes (algorithm, protocol, channels); at each agreement point
 * every rank waits at the barrier, rank 0 runs the agreement command, and all wait again. */
static int loop_noise_pct, loop_skew_pct, loop_fd = -1, loop_rank, loop_nranks = 1;
static unsigned loop_seed = 1;
/* Shared by the ranks of the multi-rank scenario: the agreement barrier and the ranks' pids (the
 * agreement command gets them all: a rank it cannot reach fails the agreement instead of being
 * left out). */
struct loop_shared {
	pthread_barrier_t barrier;
	_Atomic int npids;
	pid_t pids[8];
};
static struct loop_shared *loop_shm;
static pthread_barrier_t *loop_barrier;
static unsigned char loop_dec[LOOP_CALLS][3];

/* loop_call_bytes and loop_model_at describe call i of the loop (the same on every rank). */
static uint64_t loop_call_bytes(int i) { return loop_bytes[i % LOOP_SIZES]; }
static struct model loop_model_at(int i) {
	if (i >= LOOP_CALLS / 2) return (struct model){MODEL_RING, 2 /* SIMPLE */, 3}; /* a link degrades */
	return (struct model){-1, -1, 1};
}

/* loop_agree runs the agreement for the ranks at call i, activated at call i + LOOP_AGREE_LAG. For
 * the eBPF bundle: $NCCLBPF_AGREE_CMD --at-seq N (ncclbpf agree, reading every rank's local map
 * through its control socket). For the native policy (one rank): a copy. */
static int loop_agree(int native, int i) {
	if (native) {
		adaptive_native_agree_take();
		return 0;
	}
	if (loop_barrier) pthread_barrier_wait(loop_barrier);
	int rc = 0;
	if (loop_rank == 0) {
		const char *cmd = getenv("NCCLBPF_AGREE_CMD");
		if (!cmd || !*cmd) {
			fprintf(stderr, "loop: NCCLBPF_AGREE_CMD is not set (the ncclbpf agree command line)\n");
			rc = 2;
		} else {
			char line[4096], pids[128] = "";
			if (loop_shm) {
				while (atomic_load(&loop_shm->npids) < loop_nranks) usleep(100);
				for (int r = 0, o = 0; r < loop_nranks; r++)
					o += snprintf(pids + o, sizeof pids - (size_t)o, " %d", (int)loop_shm->pids[r]);
			} else {
				snprintf(pids, sizeof pids, " %d", (int)getpid());
			}
			snprintf(line, sizeof line, "%s --at-seq %d%s >/dev/null", cmd, i + LOOP_AGREE_LAG, pids);
			int st = system(line);
			if (st != 0) {
				fprintf(stderr, "loop: agreement at call %d failed (status %#x): %s\n", i, st, line);
				rc = 2;
			}
		}
	}
	if (loop_barrier) pthread_barrier_wait(loop_barrier);
	return rc;
}

/* loop_figures judges the decisions of a whole run (the same on every rank when consistent): per
 * bucket, the last call that did not run the model's best configuration before the slowdown (every
 * call counted) and after it; total modelled time against an oracle. enforce: check the bounds. */
static void loop_figures(const unsigned char (*dec)[3], const char *what, int enforce) {
	int n_b[LOOP_SIZES] = {0}, slow_b[LOOP_SIZES] = {0};
	int last_wrong[LOOP_SIZES][2];
	memset(last_wrong, 0xff, sizeof last_wrong);
	uint64_t total_ns = 0, best_ns = 0;
	for (int i = 0; i < LOOP_CALLS; i++) {
		int b = i % LOOP_SIZES;
		if (i == LOOP_CALLS / 2)
			for (int k = 0; k < LOOP_SIZES; k++) slow_b[k] = n_b[k];
		struct model m = loop_model_at(i);
		uint64_t t = model_ns(&m, dec[i][0], dec[i][1], dec[i][2], loop_call_bytes(i));
		int best;
		uint64_t tb = best_time(&m, loop_call_bytes(i), &best);
		total_ns += t;
		best_ns += tb;
		if (t != tb) last_wrong[b][i >= LOOP_CALLS / 2] = n_b[b];
		n_b[b]++;
	}
	printf("loop (%s): %d AllReduce calls over %d sizes; RING/SIMPLE slowed x3 at call %d; agreement every %d calls, "
	       "active %d calls later\n", what, LOOP_CALLS, LOOP_SIZES, LOOP_CALLS / 2, LOOP_AGREE_EVERY, LOOP_AGREE_LAG);
	struct model m0 = loop_model_at(0), m1 = loop_model_at(LOOP_CALLS - 1);
	for (int b = 0; b < LOOP_SIZES; b++) {
		int b0, b1, a, q, n;
		best_time(&m0, loop_bytes[b], &b0);
		best_time(&m1, loop_bytes[b], &b1);
		int conv = last_wrong[b][0] + 1;                                         /* bucket calls */
		int rec = last_wrong[b][1] < 0 ? 0 : last_wrong[b][1] + 1 - slow_b[b]; /* after the slowdown */
		cand_of(b0, &a, &q, &n);
		printf("  %8llu B: best %s/%s/%d", (unsigned long long)loop_bytes[b], algo_names[a], proto_names[q], n);
		cand_of(b1, &a, &q, &n);
		printf(" then %s/%s/%d; exploiting correctly after %d bucket calls, again %d calls after the slowdown\n",
		       algo_names[a], proto_names[q], n, conv, rec);
		if (!enforce) continue;
		CHECK(conv <= LOOP_CONVERGE_BOUND, "loop: bucket %llu B converged only after %d bucket calls (bound %d)",
		      (unsigned long long)loop_bytes[b], conv, LOOP_CONVERGE_BOUND);
		CHECK(rec <= LOOP_RECOVER_BOUND, "loop: bucket %llu B recovered only %d bucket calls after the slowdown (bound %d)",
		      (unsigned long long)loop_bytes[b], rec, LOOP_RECOVER_BOUND);
	}
	printf("  modelled time %.2f ms vs oracle %.2f ms (+%.1f%%, exploration included)\n", total_ns / 1e6, best_ns / 1e6,
	       100.0 * ((double)total_ns - (double)best_ns) / (double)best_ns);
}

static int run_loop(const char *lib, int native) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	host_tuner_v5_t *tuner = NULL;
	void *tctx = NULL;
	const uint64_t comm_id = 0x3000;
	int mask = 0;
	struct comm c;
	if (comm_open(&c, &p, comm_id, loop_rank, 8, &mask) != 0) return 2;
	if (native) {
		p.publish(NCCLBPF_PROF_COLL_END, (uintptr_t)adaptive_native_prof);
		mask = p.refresh();
	} else {
		tuner = dlsym(p.lib, "ncclTunerPlugin_v5");
		if (!tuner) {
			fprintf(stderr, "%s: no ncclTunerPlugin_v5\n", lib);
			return 2;
		}
		int nvl[3] = {1, 8, 8};
		if (tuner->init(&tctx, comm_id, 8, 1, (void *)host_log, nvl, NULL) != 0) {
			fprintf(stderr, "tuner init failed\n");
			return 2;
		}
	}
	c.mask = mask; /* read after the tuner's init: loading the bundle refreshes NCCL's mask */
	if (!(mask & NBP_EV_COLL)) return not_loaded(&p, mask);

	int apply_at = -1; /* native: the call at which the pending agreement becomes the agreed one */
	for (int i = 0; i < LOOP_CALLS; i++) {
		if (i > 0 && i % LOOP_AGREE_EVERY == 0) {
			drain(&c); /* as a stream synchronize would: every measurement so far is recorded */
			if (loop_agree(native, i) != 0) return 2;
			apply_at = i + LOOP_AGREE_LAG;
		}
		if (native && i == apply_at) adaptive_native_agree_apply();
		struct model m = loop_model_at(i);
		uint64_t bytes = loop_call_bytes(i);
		/* NCCL's cost table: TREE and RING rows available, the other algorithms -1. */
		float cost[7][3];
		uint32_t avail = 0;
		for (int a = 0; a < 7; a++)
			for (int q = 0; q < 3; q++) {
				cost[a][q] = a < 2 ? (float)model_ns(&m, a, q, 8, bytes) / 1000.0f : -1.0f;
				if (a < 2) avail |= 1u << (a * 3 + q);
			}
		int nch = 0, algo = -1, proto = -1;
		if (native) {
			int cand = adaptive_native_tune(comm_id, 4, bytes, (uint64_t)i, avail, &cost[0][0]);
			if (cand >= 0) cand_of(cand, &algo, &proto, &nch);
		} else {
			tuner->getCollInfo(tctx, 4, bytes, 1, (float **)cost, 7, 3, 0, &nch);
			float bc = 1e30f;
			for (int a = 0; a < 7; a++)
				for (int q = 0; q < 3; q++)
					if (cost[a][q] >= 0 && cost[a][q] < bc) bc = cost[a][q], algo = a, proto = q;
		}
		if (algo < 0) algo = 1, proto = 2;
		if (nch <= 0) nch = 8;
		uint64_t t = model_ns(&m, algo, proto, nch, bytes);
		/* This rank's measurement: systematically off by skew_pct %, plus independent noise. */
		int64_t measured = (int64_t)t + (int64_t)t * loop_skew_pct / 100;
		if (loop_noise_pct) {
			int64_t r = (int64_t)(rand_r(&loop_seed) % (2 * loop_noise_pct * 100 + 1)) - loop_noise_pct * 100; /* 1e-4 units */
			measured += (int64_t)t * r / 10000;
		}
		loop_dec[i][0] = (unsigned char)algo, loop_dec[i][1] = (unsigned char)proto, loop_dec[i][2] = (unsigned char)nch;
		if (loop_fd >= 0 && write(loop_fd, loop_dec[i], 3) != 3) return 2;
		struct task tk = {.seq = (uint64_t)i, .func = 4, .algo = algo, .proto = proto, .nch = nch,
		                  .count = bytes / 4, .gpu_ns = (uint64_t)(measured > 1 ? measured : 1), .net = 0, .nsteps = 0};
		emit_task(&c, &tk);
	}
	drain(&c);
	comm_close(&c);
	if (tuner) tuner->finalize(tctx);
	if (loop_fd < 0) loop_figures((const unsigned char (*)[3])loop_dec, native ? "native C policy" : "eBPF bundle", 1);
	return failures ? 1 : 0;
}

/* ---- scenario: rank consistency ------------------------------------------------------------------ */

/* Several ranks of one communicator, each in its own process with its own copy of the library and
 * of the bundle's maps (as on a cluster), run the closed loop on the same collective sequence; rank
 * r measures every collective skew_r % off the model (skew_r spread evenly over -skew..+skew) plus
 * independent +-noise %. Every 64 calls they agree (ncclbpf agree through their control sockets,
 * active 8 calls later). Every call where two ranks' decisions differ would be a rank-inconsistent
 * choice (a hang or corruption in NCCL): the full decision logs are compared call by call. */
static int run_ranks(const char *lib, int native, int nranks, int skew, int noise) {
	enum { MAXR = 8 };
	if (nranks < 1 || nranks > MAXR || (native && nranks > 1)) {
		fprintf(stderr, "ranks: 1..%d ranks (the native policy: 1)\n", MAXR);
		return 2;
	}
	struct loop_shared *shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED) return 2;
	pthread_barrierattr_t ba;
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	if (pthread_barrier_init(&shm->barrier, &ba, (unsigned)nranks) != 0) return 2;
	int fds[MAXR];
	pid_t pids[MAXR];
	for (int r = 0; r < nranks; r++) {
		int pf[2];
		if (pipe(pf) != 0) return 2;
		pid_t pid = fork();
		if (pid < 0) return 2;
		if (pid == 0) {
			close(pf[0]);
			int devnull = open("/dev/null", O_WRONLY);
			if (devnull >= 0) dup2(devnull, 1);
			loop_noise_pct = noise;
			loop_skew_pct = nranks > 1 ? -skew + 2 * skew * r / (nranks - 1) : 0;
			loop_seed = 12345u + 7919u * (unsigned)r;
			loop_fd = pf[1];
			loop_rank = r;
			loop_nranks = nranks;
			loop_barrier = &shm->barrier;
			loop_shm = shm;
			_exit(run_loop(lib, native));
		}
		close(pf[1]);
		fds[r] = pf[0];
		pids[r] = pid;
		shm->pids[r] = pid;
	}
	atomic_store(&shm->npids, nranks);
	static unsigned char dec[MAXR][LOOP_CALLS][3];
	int bad = 0;
	for (int r = 0; r < nranks; r++) {
		size_t got = 0;
		while (got < sizeof dec[r]) {
			ssize_t k = read(fds[r], (unsigned char *)dec[r] + got, sizeof dec[r] - got);
			if (k <= 0) break;
			got += (size_t)k;
		}
		close(fds[r]);
		int st = 0;
		waitpid(pids[r], &st, 0);
		CHECK(got == sizeof dec[r] && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "ranks: rank %d gave %zu bytes, status %#x", r, got, st);
		if (got != sizeof dec[r]) bad = 1;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 3) return 3;
	}
	if (bad) return 2;
	int differ = 0, first = -1;
	for (int i = 0; i < LOOP_CALLS; i++)
		for (int r = 1; r < nranks; r++)
			if (memcmp(dec[0][i], dec[r][i], 3) != 0) {
				differ++;
				if (first < 0) first = i;
				break;
			}
	loop_figures((const unsigned char (*)[3])dec[0], native ? "native C policy, rank 0" : "eBPF bundle, rank 0", 1);
	printf("ranks (%s): %d ranks in separate processes, measurements skewed -%d..+%d%% by rank and +-%d%% noise: "
	       "%d of %d calls decided differently across ranks (first at call %d)\n",
	       native ? "native C policy" : "eBPF bundle", nranks, skew, skew, noise, differ, LOOP_CALLS, first);
	return failures ? 1 : 0;
}

/* solo: a task whose program reads nothing its children bring, without channel waits or child programs
 * that need parents, is released by its stop with a plain store (plugin/profiler.c, pev.solo):
 *  - started on one thread and stopped on another, each is completed exactly once, a second stop of
 *    its handle completes nothing, and the pool is whole afterwards (470 live tasks in 512);
 *  - a proxy operation that starts under such a task after a proxy_op_end program was published is an
 *    orphan (it takes no reference on a task whose stop does not count references); both complete
 *    once, the task at its own stop. */
static _Atomic uint64_t solo_p2p_runs, solo_proxy_runs, solo_proxy_orphans;
static uint64_t solo_p2p_prog(void *ctx) {
	(void)ctx;
	atomic_fetch_add(&solo_p2p_runs, 1);
	return 0;
}
static uint64_t solo_proxy_prog(void *ctx) {
	const struct ncclbpf_prof_ctx *c = ctx;
	atomic_fetch_add(&solo_proxy_runs, 1);
	if (c->flags & NCCLBPF_PROF_F_ORPHAN) atomic_fetch_add(&solo_proxy_orphans, 1);
	return 0;
}
enum { SOLO_BATCH = 400 };
struct solo_arg {
	struct plug *p;
	void *ctx;
	void **h;
	int stop; /* 0: start SOLO_BATCH tasks into h, 1: stop them, 2: stop them again */
};
static void *solo_worker(void *arg) {
	struct solo_arg *a = arg;
	union descr d;
	for (int k = 0; k < SOLO_BATCH; k++) {
		if (a->stop) {
			if (a->h[k]) a->p->stop(a->h[k]);
			continue;
		}
		struct task t = {.is_p2p = 1, .func = 6, .peer = 1, .nch = 2, .count = 64};
		d_task(5, &d, &t, NULL, NULL, 0);
		a->h[k] = NULL;
		a->p->start(a->ctx, &a->h[k], &d);
	}
	return NULL;
}
static void solo_on_thread(struct solo_arg *a) {
	pthread_t th;
	pthread_create(&th, NULL, solo_worker, a);
	pthread_join(th, NULL);
}

static int run_solo(const char *lib) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	uintptr_t (*publish_needs)(int, uintptr_t, uint32_t) =
		(uintptr_t(*)(int, uintptr_t, uint32_t))dlsym(p.lib, "ncclbpf_prof_publish_needs");
	CHECK(publish_needs != NULL, "solo: %s has no ncclbpf_prof_publish_needs", lib);
	if (!publish_needs) return 1;
	setenv("NCCLBPF_PROF_POOL", "512", 1);
	int mask = 0;
	void *ctx = NULL;
	if (plug_init(&p, &ctx, 0xb000, &mask, 2, 0) != 0) return 2;
	unsetenv("NCCLBPF_PROF_POOL");
	publish_needs(NCCLBPF_PROF_P2P_END, (uintptr_t)solo_p2p_prog, 0);
	p.refresh();
	/* start on one thread, stop on another, stop again on a third, 10 rounds */
	enum { ROUNDS = 10 };
	static void *h[SOLO_BATCH];
	int started = 0;
	for (int r = 0; r < ROUNDS; r++) {
		for (int step = 0; step < 3; step++) {
			struct solo_arg a = {&p, ctx, h, step};
			solo_on_thread(&a);
		}
		for (int k = 0; k < SOLO_BATCH; k++) started += h[k] != NULL;
	}
	uint64_t runs = atomic_load(&solo_p2p_runs);
	CHECK(started == ROUNDS * SOLO_BATCH && runs == (uint64_t)started,
	      "solo: %d tasks started on one thread, stopped on another (twice): %llu completions", started,
	      (unsigned long long)runs);
	static void *live[470];
	int got = 0;
	union descr d;
	for (int i = 0; i < 470; i++) {
		struct task t = {.is_p2p = 1, .func = 7, .peer = 1, .nch = 0, .count = 64};
		d_task(5, &d, &t, NULL, NULL, 0);
		live[i] = NULL;
		p.start(ctx, &live[i], &d);
		got += live[i] != NULL;
	}
	for (int i = 0; i < 470; i++)
		if (live[i]) p.stop(live[i]);
	CHECK(got == 470, "solo: afterwards %d of 470 live tasks got an event", got);

	/* a proxy_op_end program published while a solo task lives: its proxy op is an orphan */
	atomic_store(&solo_p2p_runs, 0);
	void *task = NULL, *op = NULL;
	struct task t = {.is_p2p = 1, .func = 6, .peer = 1, .nch = 0, .count = 64};
	d_task(5, &d, &t, NULL, NULL, 0);
	p.start(ctx, &task, &d);
	publish_needs(NCCLBPF_PROF_PROXY_OP_END, (uintptr_t)solo_proxy_prog, NCCLBPF_PROF_NEED_ALL);
	p.refresh();
	d_proxy_op(5, &d, task, 0, 0, 1, 4, 1);
	p.start(ctx, &op, &d);
	CHECK(task && op, "solo: task %p, proxy op %p", task, op);
	if (task) p.stop(task);
	uint64_t at_stop = atomic_load(&solo_p2p_runs);
	if (op) p.stop(op);
	CHECK(at_stop == 1 && atomic_load(&solo_p2p_runs) == 1 && atomic_load(&solo_proxy_runs) == 1 &&
	          atomic_load(&solo_proxy_orphans) == 1,
	      "solo: task completed %llu times at its stop (%llu in all), proxy op %llu times, %llu as an orphan",
	      (unsigned long long)at_stop, (unsigned long long)atomic_load(&solo_p2p_runs),
	      (unsigned long long)atomic_load(&solo_proxy_runs), (unsigned long long)atomic_load(&solo_proxy_orphans));
	struct ncclbpf_prof_stats st;
	p.stats(&st);
	CHECK(st.events_dropped == 0 && st.events_forced == 0, "solo: dropped %llu forced %llu",
	      (unsigned long long)st.events_dropped, (unsigned long long)st.events_forced);
	publish_needs(NCCLBPF_PROF_PROXY_OP_END, 0, 0);
	publish_needs(NCCLBPF_PROF_P2P_END, 0, 0);
	p.refresh();
	p.finalize(ctx);
	printf("solo: %d tasks completed once across threads, %d live after, child of a solo task an orphan\n", started, got);
	return failures ? 1 : 0;
}

/* ---- scenario: bench ---------------------------------------------------------------------------- */

static uint64_t noop_prog(void *ctx) {
	(void)ctx;
	return 0;
}

/* bench_round emits n collectives on ctx as NCCL would under the activation mask: the task, and
 * its NCH kernel channels with GPU stamps only when the mask asks for kernel channels. Returns ns per
 * profiler call; *calls_out: the calls made. */
__attribute__((noinline)) static double bench_round(struct plug *p, void *ctx, int n, int mask, uint64_t *calls_out) {
	enum { NCH = 2 };
	/* The descriptors are built once and only their changing members set per collective: the
	 * host's share stays small and the same for every plugin. */
	union descr d, dk[NCH];
	struct task t0 = {.func = 4, .algo = 1, .proto = 2, .nch = NCH, .count = 256};
	d_task(5, &d, &t0, NULL, NULL, 0);
	for (int ch = 0; ch < NCH; ch++) d_kch(5, &dk[ch], NULL, ch, 0);
	uint64_t calls = 0;
	int nch = mask & NBP_EV_KERNEL_CH ? NCH : 0;
	uint64_t t0ns = now_ns();
	for (int i = 0; i < n; i++) {
		void *h = NULL, *k[NCH];
		d.v6.coll.seqNumber = (uint64_t)i;
		d.v6.coll.count = 256u << (i & 7);
		p->start(ctx, &h, &d);
		if (h) p->stop(h);
		for (int ch = 0; ch < nch; ch++) {
			dk[ch].v6.parentObj = h;
			dk[ch].v6.kernelCh.pTimer = 1000000 + (uint64_t)i;
			k[ch] = NULL;
			p->start(ctx, &k[ch], &dk[ch]);
		}
		for (int ch = 0; ch < nch; ch++) {
			nbp_state_args_v6_t a = {.kernelCh = {.pTimer = 1000000 + (uint64_t)i + 5000 + (uint64_t)(i & 255) * 100}};
			if (!k[ch]) continue;
			p->record(k[ch], NBP_ST_KERNEL_CH_STOP, &a);
			p->stop(k[ch]);
		}
		calls += 2 + 3 * (uint64_t)nch;
	}
	uint64_t t1 = now_ns();
	*calls_out = calls;
	return (double)(t1 - t0ns) / (double)calls;
}

/* A plugin that does nothing (every start gives a handle): the host's own share of a round. */
static int stub_token;
__attribute__((noinline)) static nbp_result_t stub_start(void *c, void **h, void *d) {
	(void)c, (void)d;
	*h = &stub_token;
	return NBP_SUCCESS;
}
__attribute__((noinline)) static nbp_result_t stub_stop(void *h) {
	(void)h;
	return NBP_SUCCESS;
}
__attribute__((noinline)) static nbp_result_t stub_record(void *h, nbp_state_t st, void *a) {
	(void)h, (void)st, (void)a;
	return NBP_SUCCESS;
}

/* calls: N collectives on one context, v5, with an empty program in coll_end published as reading
 * nothing (mask 0x2: task start and stop), or with timed set, as reading what latency_stats reads (mask
 * 0x42: the task and 2 kernel channels with GPU stamps, 8 calls): the paths scripts/count-profiler.sh
 * counts the instructions of under callgrind. */
static int run_calls(const char *lib, int n, int timed) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	uintptr_t (*publish_needs)(int, uintptr_t, uint32_t) =
		(uintptr_t(*)(int, uintptr_t, uint32_t))dlsym(p.lib, "ncclbpf_prof_publish_needs");
	int mask = 0;
	void *ctx = NULL;
	if (plug_init(&p, &ctx, 0x4000, &mask, 8, 0) != 0) return 2;
	uint32_t needs = timed ? NCCLBPF_PROF_NEED_START | NCCLBPF_PROF_NEED_END | NCCLBPF_PROF_NEED_CHILDREN : 0;
	if (publish_needs)
		publish_needs(NCCLBPF_PROF_COLL_END, (uintptr_t)noop_prog, needs);
	else
		p.publish(NCCLBPF_PROF_COLL_END, (uintptr_t)noop_prog);
	int m = p.refresh();
	uint64_t c = 0;
	bench_round(&p, ctx, n, timed ? m : m & ~NBP_EV_KERNEL_CH, &c);
	p.publish(NCCLBPF_PROF_COLL_END, 0);
	p.finalize(ctx);
	printf("calls: %llu profiler calls, mask %#x\n", (unsigned long long)c, m);
	return 0;
}

/* The benchmark, in one process and on one context, alternating the program in the coll_end slot
 * (each publish followed by the mask refresh, as the control plane does): the bundle's
 * latency_stats (JIT-compiled; skipped with "native"), the same logic compiled natively, and a
 * program that does nothing, published as reading what latency_stats reads (the times and the GPU
 * span: the fixed cost of a timing program) and, where the library has ncclbpf_prof_publish_needs,
 * as reading nothing (what the verifier finds for an empty program). Best of 30 rounds each. */
static int run_bench(const char *lib, int native) {
	struct plug p;
	if (plug_open(&p, lib, 5) != 0) return 2;
	uintptr_t (*publish_needs)(int, uintptr_t, uint32_t) =
		(uintptr_t(*)(int, uintptr_t, uint32_t))dlsym(p.lib, "ncclbpf_prof_publish_needs");
	uint32_t (*needs_of)(int) = (uint32_t(*)(int))dlsym(p.lib, "ncclbpf_prof_needs");
	int mask = 0;
	void *ctx = NULL;
	if (plug_init(&p, &ctx, 0x4000, &mask, 8, 0) != 0) return 2;
	host_tuner_v5_t *tuner = native ? NULL : dlsym(p.lib, "ncclTunerPlugin_v5");
	void *tctx = NULL;
	int nvl[3] = {1, 8, 8};
	if (tuner && tuner->init(&tctx, 0x4000, 8, 1, (void *)host_log, nvl, NULL) != 0) return 2;
	enum { K = 4 };
	uintptr_t progs[K] = {0, (uintptr_t)latency_native_prog, (uintptr_t)noop_prog, publish_needs ? (uintptr_t)noop_prog : 0};
	/* latency_stats reads duration_ns and gpu_duration_ns */
	uint32_t lat_needs = NCCLBPF_PROF_NEED_START | NCCLBPF_PROF_NEED_END | NCCLBPF_PROF_NEED_CHILDREN;
	if (!native) {
		if (!(mask & NBP_EV_COLL)) return not_loaded(&p, mask);
		if (needs_of) lat_needs = needs_of(NCCLBPF_PROF_COLL_END); /* what the verifier found */
		progs[0] = p.publish(NCCLBPF_PROF_COLL_END, 0); /* the bundle's entry */
	}
	uint32_t needs[K] = {lat_needs, lat_needs, lat_needs, 0};
	const char *names[K] = {"ebpf latency_stats", "native latency_stats", "empty program, reads what latency_stats reads",
	                        "empty program, reads nothing"};
	if (!publish_needs) /* a library without it fills every field for every program */
		for (int k = 0; k < K; k++) needs[k] = NCCLBPF_PROF_NEED_ALL;
	int masks[K] = {0};
	double best[K] = {1e30, 1e30, 1e30, 1e30}, host[2] = {1e30, 1e30}; /* host alone: with, without channels */
	uint64_t calls[K] = {0}, c = 0;
	struct plug stub = p;
	stub.start = (start_fn)stub_start;
	stub.stop = stub_stop;
	stub.record = (record_fn)stub_record;
	/* Short rounds, many of them, the best kept: a round that another process interrupted does not count. */
	enum { ROUNDS = 30, COLLS = 20000 };
	for (int r = 0; r <= ROUNDS; r++) { /* round 0: warm-up */
		for (int k = 0; k < K; k++) {
			if (!progs[k]) continue;
			if (publish_needs)
				publish_needs(NCCLBPF_PROF_COLL_END, progs[k], needs[k]);
			else
				p.publish(NCCLBPF_PROF_COLL_END, progs[k]);
			masks[k] = p.refresh();
			double ns = bench_round(&p, ctx, COLLS, masks[k], &c);
			if (r && ns < best[k]) best[k] = ns, calls[k] = c;
		}
		for (int h = 0; h < 2; h++) {
			double ns = bench_round(&stub, NULL, COLLS, h ? 0 : NBP_EV_KERNEL_CH, &c);
			if (r && ns < host[h]) host[h] = ns;
		}
	}
	struct ncclbpf_prof_stats st;
	p.stats(&st);
	CHECK(st.events_dropped == 0 && st.events_forced == 0, "bench: dropped %llu forced %llu",
	      (unsigned long long)st.events_dropped, (unsigned long long)st.events_forced);
	CHECK(latency_native_count(4, 0) == 0 && latency_native_count(4, 10) > 0, "bench: native latency table not filled");
	p.publish(NCCLBPF_PROF_COLL_END, 0);
	p.finalize(ctx);
	if (tuner) tuner->finalize(tctx);
	printf("bench: %d collectives a round (task start/stop, and 2 kernel channels with GPU stamps when the mask asks for them), best of %d\n",
	       COLLS, ROUNDS);
	printf("bench host alone (a plugin that does nothing): %.1f ns/call with channels, %.1f without\n", host[0], host[1]);
	for (int k = 0; k < K; k++)
		if (progs[k]) {
			double h = masks[k] & NBP_EV_KERNEL_CH ? host[0] : host[1];
			printf("bench %s: %.1f ns/call, %.1f ns/collective, %.0f calls/collective, mask %#x, needs %#x; "
			       "added by the plugin: %.1f ns/call\n",
			       names[k], best[k], best[k] * (double)calls[k] / COLLS, (double)calls[k] / COLLS, masks[k], needs[k], best[k] - h);
		}
	if (progs[0])
		printf("bench ratio ebpf/native: %.3f per profiler call (program share: %.1f ns vs %.1f ns per collective)\n",
		       best[0] / best[1], (best[0] - best[2]) * 8, (best[1] - best[2]) * 8);
	return failures ? 1 : 0;
}

/* ---- scenario: loadwarn ------------------------------------------------------------------------ */

static _Atomic int lw_warn, lw_info;
static void lw_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)flags, (void)file, (void)line, (void)fmt;
	if (level == 2) atomic_fetch_add(&lw_warn, 1);
	else atomic_fetch_add(&lw_info, 1);
}

/* loadwarn: the library used only as NCCL's profiler (no tuner init), with the policy named by
 * NCCLBPF_POLICY: v1 (no logger) then three v5 communicators. Prints the warnings NCCL's logger
 * received and how many inits failed; the caller judges (a policy that did not load: exactly one
 * warning; inits fail only under NCCLBPF_STRICT). */
static int run_loadwarn(const char *lib) {
	struct plug p1, p5;
	if (plug_open(&p1, lib, 1) != 0 || plug_open(&p5, lib, 5) != 0) return 2;
	int mask = 0, failed = 0;
	void *ctx[4] = {0};
	if (((const nbp_profiler_v1_t *)p1.sym)->init(&ctx[0], &mask) != 0) failed++;
	else CHECK(ctx[0], "v1 init succeeded without a context");
	for (int i = 1; i < 4; i++) {
		if (((const nbp_profiler_v6_t *)p5.sym)->init(&ctx[i], 0x7000 + (uint64_t)i, &mask, "comm", 1, 2, 0, lw_log) != 0)
			failed++;
		else
			CHECK(ctx[i], "v5 init %d succeeded without a context", i);
	}
	if (ctx[0]) p1.finalize(ctx[0]);
	for (int i = 1; i < 4; i++)
		if (ctx[i]) p5.finalize(ctx[i]);
	printf("loadwarn: %d warnings, %d other messages, mask %#x, %d of 4 inits failed\n", atomic_load(&lw_warn),
	       atomic_load(&lw_info), mask, failed);
	return failures ? 1 : 0;
}

/* ---- scenario: metrics ------------------------------------------------------------------------- */

/* metrics_cost fills a cost table in which NCCL's cheapest cell is Tree/LL below 300 KB and
 * Ring/LL128 above; Ring/Simple and Tree/Simple are available and never the cheapest. */
static void metrics_cost(float t[7][3], uint64_t b) {
	for (int a = 0; a < 7; a++)
		for (int q = 0; q < 3; q++) t[a][q] = -1.0f;
	t[0][0] = 5.0f + (float)b / 1e4f;
	t[0][2] = 30.0f + (float)b / 1e4f;
	t[1][1] = 20.0f + (float)b / 2e4f;
	t[1][2] = 40.0f + (float)b / 1.9e4f;
}

/* metrics_tag is the user tag of the metrics host's collective i of n under profiler ABI v7: in
 * turn none, 0x11 and 0xabc0000000000001, each for three collectives of a communicator (one of each
 * function; sizes 1 KiB to 1 MiB in six steps, one step every 9), so that the two tags take 36
 * histograms of each context; the last 40 (20 a communicator) each have a new tag, 0x100 + i / 2,
 * more tags than a context keeps and, with those, more tagged histograms. */
static uint64_t metrics_tag(int i, int n) {
	if (i >= n - 40) return 0x100 + (uint64_t)i / 2;
	static const uint64_t tags[3] = {0, 0x11, 0xabc0000000000001ull};
	return tags[(i / 6) % 3];
}

/* metrics LIB N [V]: known traffic for the exporter's tests. Two communicators (ranks 0 and 1 of 8),
 * each with a tuner v5 and a profiler context of the library (ABI v5, or V: 7 for user tags,
 * metrics_tag); N collectives (AllReduce, AllGather, Broadcast in turn, 256 B to 64 MiB, under v7
 * 1 KiB to 1 MiB), each a
 * getCollInfo, then a task with two kernel channels whose GPU stamps make a known latency. One line
 * per collective:
 *   call COMM SEQ COLL BYTES CELL CH DIFFERS ALGO PROTO LATNS TAG
 * (CELL: the cell the policy made cheapest, algo*3+proto, or 21 if none; DIFFERS: that cell cost
 * more than the cheapest available one; ALGO/PROTO: what ran, given to the profiler; LATNS: the GPU
 * span; TAG: the user tag, 0 for none; no profiler event is sent when the event mask has no
 * collectives, as NCCL does). Then "ready PID", and it waits for stdin to close before finalizing. */
static int run_metrics(const char *lib, int n, int v) {
	struct plug p;
	if (v != 5 && v != 7) {
		fprintf(stderr, "metrics: profiler ABI version %d: want 5 or 7\n", v);
		return 2;
	}
	if (plug_open(&p, lib, v) != 0) return 2;
	host_tuner_v5_t *tuner = dlsym(p.lib, "ncclTunerPlugin_v5");
	if (!tuner) return 2;
	enum { NC = 2 };
	static const uint64_t ids[NC] = {0x5100, 0x5200};
	static const int colls[3] = {4, 2, 0};
	void *pctx[NC], *tctx[NC];
	int mask = 0, nvl[3] = {1, 8, 8};
	for (int c = 0; c < NC; c++) {
		if (plug_init(&p, &pctx[c], ids[c], &mask, 8, c) != 0) return 2;
		if (tuner->init(&tctx[c], ids[c], 8, 1, (void *)host_log, nvl, NULL) != 0) return 2;
	}
	mask = p.refresh();
	printf("mask %#x\n", mask);
	uint64_t seq[NC] = {0, 0}, ptimer = 1000000;
	union descr d;
	for (int i = 0; i < n; i++) {
		int c = i % NC, coll = colls[(i / NC) % 3];
		uint64_t bytes = 1ull << (8 + (i * 7 + i / 6) % 19);
		if (v == 7) bytes = 1ull << (10 + 2 * ((i / 18) % 6)); /* fewer keys: tags multiply them */
		float t[7][3], orig[7][3];
		metrics_cost(t, bytes);
		memcpy(orig, t, sizeof t);
		int nch = 0;
		tuner->getCollInfo(tctx[c], coll, bytes, 1, (float **)(void *)t, 7, 3, 0, &nch);
		int cell = 21, algo = -1, proto = -1, differs = 0;
		float best = 1e30f;
		for (int a = 0; a < 7; a++)
			for (int q = 0; q < 3; q++) {
				if (t[a][q] == 0.0f && orig[a][q] != 0.0f) cell = a * 3 + q;
				if (t[a][q] >= 0.0f && t[a][q] < best) best = t[a][q], algo = a, proto = q; /* NCCL's pick */
			}
		if (cell < 21)
			for (int a = 0; a < 7; a++)
				for (int q = 0; q < 3; q++)
					if (orig[a][q] >= 0.0f && orig[a][q] < orig[cell / 3][cell % 3]) differs = 1;
		uint64_t lat = 2000ull * (uint64_t)(1 + i % 5) << (i % 9);
		uint64_t tag = v == 7 ? metrics_tag(i, n) : 0;
		if (!(mask & NBP_EV_COLL)) goto done; /* as NCCL: no collective events unless the mask asks */
		void *h = NULL, *k[2];
		struct task tk = {.seq = seq[c], .func = coll, .algo = algo, .proto = proto, .nch = 2, .count = bytes / 4};
		d_task(v, &d, &tk, NULL, NULL, c);
		if (v == 7) d.v7.coll.userTag = tag;
		p.start(pctx[c], &h, &d);
		p.stop(h);
		for (int ch = 0; ch < 2; ch++) {
			d_kch(v, &d, h, ch, ptimer);
			k[ch] = NULL;
			p.start(pctx[c], &k[ch], &d);
		}
		for (int ch = 0; ch < 2; ch++) {
			nbp_state_args_v6_t a = {.kernelCh = {.pTimer = ptimer + (ch ? lat : lat / 2)}};
			p.record(k[ch], NBP_ST_KERNEL_CH_STOP, &a);
			p.stop(k[ch]);
		}
		ptimer += lat + 1000;
	done:
		printf("call %#llx %llu %d %llu %d %d %d %d %d %llu %#llx\n", (unsigned long long)ids[c], (unsigned long long)seq[c],
		       coll, (unsigned long long)bytes, cell, nch, differs, algo, proto, (unsigned long long)lat,
		       (unsigned long long)tag);
		seq[c]++;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char line[256];
	while (fgets(line, sizeof line, stdin)) {
	}
	for (int c = 0; c < NC; c++) {
		p.finalize(pctx[c]);
		tuner->finalize(tctx[c]);
	}
	return failures ? 1 : 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: %s events|mask|v7|phase|nokch|loop|bench LIB [native|ebpf]\n"
		                "       %s ranks LIB native|ebpf NRANKS SKEW_PCT NOISE_PCT\n", argv[0], argv[0]);
		return 2;
	}
	int native = argc > 3 && !strcmp(argv[3], "native");
	int rc;
	if (!strcmp(argv[1], "events"))
		rc = run_events(argv[2], 0);
	else if (!strcmp(argv[1], "eventslight"))
		rc = run_events(argv[2], 1);
	else if (!strcmp(argv[1], "mask"))
		rc = run_mask(argv[2]);
	else if (!strcmp(argv[1], "maskon"))
		rc = run_maskon(argv[2]);
	else if (!strcmp(argv[1], "fill"))
		rc = run_fill(argv[2]);
	else if (!strcmp(argv[1], "v7"))
		rc = run_v7(argv[2]);
	else if (!strcmp(argv[1], "phase"))
		rc = run_phase(argv[2]);
	else if (!strcmp(argv[1], "threadexit"))
		rc = run_threadexit(argv[2]);
	else if (!strcmp(argv[1], "solo"))
		rc = run_solo(argv[2]);
	else if (!strcmp(argv[1], "calls") && argc > 3)
		rc = run_calls(argv[2], atoi(argv[3]), argc > 4 && !strcmp(argv[4], "timed"));
	else if (!strcmp(argv[1], "maskreload"))
		rc = run_maskreload(argv[2]);
	else if (!strcmp(argv[1], "needs") && argc > 4)
		rc = run_needs(argv[2], (int)strtol(argv[3], NULL, 0), atoi(argv[4]));
	else if (!strcmp(argv[1], "swap"))
		rc = run_swap(argv[2]);
	else if (!strcmp(argv[1], "stuck"))
		rc = run_stuck(argv[2]);
	else if (!strcmp(argv[1], "nokch"))
		rc = run_nokch(argv[2]);
	else if (!strcmp(argv[1], "loop"))
		rc = run_loop(argv[2], native);
	else if (!strcmp(argv[1], "ranks"))
		rc = run_ranks(argv[2], native, argc > 4 ? atoi(argv[4]) : 2, argc > 5 ? atoi(argv[5]) : 20,
		               argc > 6 ? atoi(argv[6]) : 5);
	else if (!strcmp(argv[1], "bench"))
		rc = run_bench(argv[2], native);
	else if (!strcmp(argv[1], "loadwarn"))
		rc = run_loadwarn(argv[2]);
	else if (!strcmp(argv[1], "metrics"))
		rc = run_metrics(argv[2], argc > 3 ? atoi(argv[3]) : 600, argc > 4 ? atoi(argv[4]) : 5);
	else {
		fprintf(stderr, "unknown scenario %s\n", argv[1]);
		return 2;
	}
	if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
	return rc ? rc : (failures ? 1 : 0);
}

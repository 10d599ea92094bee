/* SPDX-License-Identifier: MIT */
/*
 * fake_nccl.c: a host-memory stand-in for the CUDA runtime and NCCL calls that the GPU check uses
 * (testhost/gpu/nccl_p2p.c and, through ctypes, testhost/gpu/fake/torch). It drives the real
 * libncclbpf.so the way NCCL 2.28 does on a 1-rank communicator: it dlopens NCCL_PROFILER_PLUGIN
 * and NCCL_TUNER_PLUGIN once, logs "PROFILER/Plugin: Loaded NAME (v5)" and "TUNER/Plugin: Using NAME
 * (v5)", and calls the profiler's and the tuner's init per communicator (profiler first). Each send or
 * receive of a group becomes a P2p event (start, stop) when the activation mask asks for P2p, and
 * finalize is called for both at ncclCommDestroy. Its logger prints NCCL's line format
 * ("host:pid:tid [0] NCCL INFO ...") at the level NCCL_DEBUG asks for.
 *
 * With FAKE_GPUS=N (default 1) it also has N "GPUs" for ncclCommInitAll: a communicator of N ranks,
 * whose all-reduces (float sum, within a group) ask the tuner's getCollInfo once per rank with a cost
 * table as NCCL fills it (Tree and Ring costs, the other algorithms NCCL_ALGO_PROTO_IGNORE) and apply
 * the cheapest cell, as NCCL's enqueue path does; a 1-rank all-reduce is a copy without the tuner.
 *
 * ncclGetUniqueId and ncclCommInitRank also make communicators of several processes (nccl_allreduce
 * bench-procs): the id names a shared-memory file in which each rank's all-reduce input meets the
 * others' behind a barrier; each rank's tuner is asked as above, with one node per rank.
 *
 * It is no model of NCCL beyond that: no kernels, no transport. For testhost/gpu/dry-run.sh and
 * testhost/gpu/tuner-cost-dry.sh only. FAKE_CORRUPT=N corrupts the N-th group's received bytes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../../plugin/profiler_abi.h"
#include "../../nccl_abi.h"

/* ---- the CUDA runtime, on host memory ---- */
typedef int cudaError_t;
typedef void *cudaStream_t;
static int fake_gpus(void) {
	const char *s = getenv("FAKE_GPUS");
	int n = s ? atoi(s) : 1;
	return n < 1 ? 1 : n > 16 ? 16 : n;
}
cudaError_t cudaSetDevice(int d) { return d >= 0 && d < fake_gpus() ? 0 : 1; }
cudaError_t cudaGetDeviceCount(int *n) {
	*n = fake_gpus();
	return 0;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = NULL; return 0; }
cudaError_t cudaMalloc(void **p, size_t n) { return (*p = malloc(n)) ? 0 : 2; }
cudaError_t cudaMallocHost(void **p, size_t n) { return (*p = malloc(n)) ? 0 : 2; }
cudaError_t cudaFree(void *p) { free(p); return 0; }
cudaError_t cudaFreeHost(void *p) { free(p); return 0; }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) { (void)s; memset(p, v, n); return 0; }
cudaError_t cudaMemcpyAsync(void *d, const void *src, size_t n, int k, cudaStream_t s) {
	(void)k, (void)s;
	memcpy(d, src, n);
	return 0;
}
cudaError_t cudaMemcpy(void *d, const void *src, size_t n, int k) { (void)k; memcpy(d, src, n); return 0; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return 0; }
const char *cudaGetErrorString(cudaError_t e) { return e ? "fake CUDA error" : "no error"; }

/* ---- NCCL's logger ---- */
static int debug_level(void) {
	const char *d = getenv("NCCL_DEBUG");
	if (!d) return 0;
	if (!strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE")) return 3;
	if (!strcasecmp(d, "WARN")) return 2;
	return 0;
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)flags, (void)file, (void)line;
	if (level < 2 || level > debug_level()) return;
	char host[64] = "fakehost";
	gethostname(host, sizeof host - 1);
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	printf("%s:%d:%ld [0] NCCL %s %s\n", host, (int)getpid(), (long)syscall(SYS_gettid), level == 2 ? "WARN" : "INFO",
	       msg);
	fflush(stdout);
}

/* ---- plugins ---- */
static nbp_profiler_v5_t *prof;
static host_tuner_v5_t *tuner;
static int plugins_loaded;

static void *plugin_sym(const char *env, const char *sym, const char *what) {
	const char *path = getenv(env);
	if (!path || !*path) return NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		logger(3, 0, __FILE__, __LINE__, "%s/Plugin: Could not find: %s (%s)", what, path, dlerror());
		return NULL;
	}
	void *s = dlsym(h, sym);
	if (!s) logger(3, 0, __FILE__, __LINE__, "%s/Plugin: no %s in %s", what, sym, path);
	return s;
}

static void load_plugins(void) {
	if (plugins_loaded++) return;
	prof = plugin_sym("NCCL_PROFILER_PLUGIN", "ncclProfiler_v5", "PROFILER");
	if (prof) logger(3, 0, __FILE__, __LINE__, "PROFILER/Plugin: Loaded %s (v5)", prof->name);
	tuner = plugin_sym("NCCL_TUNER_PLUGIN", "ncclTunerPlugin_v5", "TUNER");
	if (tuner) logger(3, 0, __FILE__, __LINE__, "TUNER/Plugin: Using %s (v5)", tuner->name);
}

/* ---- NCCL ---- */
typedef struct { char internal[128]; } ncclUniqueId;
struct ncclComm {
	uint64_t id;
	int nranks, rank;
	void *pctx, *tctx;
	volatile int mask;
	struct xproc *xp; /* a communicator of several processes */
};

/* The shared memory of a communicator of several processes: a barrier and one input slot per rank. */
#define XP_MAXR 16
#define XP_MAXF (1 << 14)
struct xproc {
	_Atomic unsigned arrived, gen, attached;
	float slot[XP_MAXR][XP_MAXF];
};

static void xp_barrier(struct xproc *x, int n) {
	unsigned g = atomic_load(&x->gen);
	if (atomic_fetch_add(&x->arrived, 1) == (unsigned)n - 1) {
		atomic_store(&x->arrived, 0);
		atomic_fetch_add(&x->gen, 1);
	} else {
		while (atomic_load(&x->gen) == g) sched_yield();
	}
}
typedef struct ncclComm *ncclComm_t;

static uint64_t next_id = 0x5eed0001;
static struct op { const void *send; void *recv; size_t n; ncclComm_t comm; int allreduce; } ops[64];
static int nops, depth;
static ncclComm_t group_comm;
static long tuned[21]; /* all-reduces per cell chosen (FAKE_TUNED prints them) */
typedef enum { ncclFloat = 7 } ncclDataType_t; /* the types and operations the fake serves */
typedef enum { ncclSum = 0 } ncclRedOp_t;
static long groups_done, corrupt_at = -2;

ncclResult_t ncclGetUniqueId(ncclUniqueId *u) {
	static unsigned seq;
	memset(u, 0, sizeof *u);
	snprintf(u->internal, sizeof u->internal, "/fake-nccl-%d-%u", (int)getpid(), seq++);
	int fd = shm_open(u->internal, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) return ncclInternalError;
	int bad = ftruncate(fd, sizeof(struct xproc));
	close(fd);
	return bad ? ncclInternalError : ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
	if (nranks < 1 || nranks > XP_MAXR || rank < 0 || rank >= nranks) return ncclInvalidArgument;
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c) return ncclInternalError;
	c->id = next_id++ * 0x9e3779b97f4a7c15ull;
	if (nranks > 1) {
		int fd = shm_open(id.internal, O_RDWR, 0);
		if (fd < 0) return ncclInvalidArgument;
		c->xp = mmap(NULL, sizeof(struct xproc), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (c->xp == MAP_FAILED) return ncclInternalError;
		if (atomic_fetch_add(&c->xp->attached, 1) == (unsigned)nranks - 1) shm_unlink(id.internal);
		c->id = 0x9e3779b97f4a7c15ull;
		for (const char *p = id.internal; *p; p++) c->id = (c->id ^ (unsigned char)*p) * 0x100000001b3ull;
	}
	load_plugins();
	/* the mask lives as long as the communicator: the plugin keeps the pointer and updates it */
	if (prof && prof->init(&c->pctx, c->id, (int *)&c->mask, "fake", nranks, nranks, rank, logger) != 0) {
		logger(2, 0, __FILE__, __LINE__, "Profiler init failed; continuing without profiler");
		c->pctx = NULL;
	}
	if (tuner && tuner->init(&c->tctx, c->id, (size_t)nranks, (size_t)nranks, logger, NULL, NULL) != 0) c->tctx = NULL;
	c->nranks = nranks;
	c->rank = rank;
	logger(3, 0, __FILE__, __LINE__, "comm %p rank %d nRanks %d - Init COMPLETE (fake)", (void *)c, rank, nranks);
	if (c->xp) xp_barrier(c->xp, nranks);
	*out = c;
	return ncclSuccess;
}

/* ncclCommInitAll: one communicator of n ranks over the fake GPUs 0..n-1 (devs ignored but checked). */
ncclResult_t ncclCommInitAll(ncclComm_t *out, int n, const int *devs) {
	if (n < 1 || n > fake_gpus()) return ncclInvalidArgument;
	uint64_t id = next_id++ * 0x9e3779b97f4a7c15ull;
	load_plugins();
	for (int r = 0; r < n; r++) {
		if (devs && (devs[r] < 0 || devs[r] >= fake_gpus())) return ncclInvalidArgument;
		struct ncclComm *c = calloc(1, sizeof *c);
		if (!c) return ncclInternalError;
		c->id = id;
		c->nranks = n;
		c->rank = r;
		if (prof && prof->init(&c->pctx, c->id, (int *)&c->mask, "fake", 1, n, r, logger) != 0) c->pctx = NULL;
		if (tuner && tuner->init(&c->tctx, c->id, (size_t)n, 1, logger, NULL, NULL) != 0) c->tctx = NULL;
		logger(3, 0, __FILE__, __LINE__, "comm %p rank %d nRanks %d - Init COMPLETE (fake)", (void *)c, r, n);
		out[r] = c;
	}
	return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c) { return c ? ncclSuccess : ncclInvalidArgument; }

ncclResult_t ncclCommDestroy(ncclComm_t c) {
	if (!c) return ncclInvalidArgument;
	if (c->rank == 0 && c->nranks > 1 && getenv("FAKE_TUNED")) { /* the cells chosen, for the dry run */
		printf("FAKE_TUNED");
		for (int i = 0; i < 21; i++)
			if (tuned[i]) printf(" %d:%ld", i, tuned[i]);
		printf("\n");
	}
	if (tuner && c->tctx) tuner->finalize(c->tctx);
	if (prof && c->pctx) prof->finalize(c->pctx);
	if (c->xp) munmap(c->xp, sizeof(struct xproc));
	free(c);
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
	if (depth++ == 0) nops = 0;
	return ncclSuccess;
}

static void p2p_event(ncclComm_t c, const char *func, size_t n) {
	if (!prof || !c->pctx || !(c->mask & NBP_EV_P2P)) return;
	nbp_descr_v5_t d;
	memset(&d, 0, sizeof d);
	d.type = NBP_EV_P2P;
	d.rank = 0;
	d.p2p.func = func;
	d.p2p.count = n;
	d.p2p.datatype = "ncclInt8";
	d.p2p.peer = 0;
	d.p2p.nChannels = 1;
	void *h = NULL;
	prof->startEvent(c->pctx, &h, &d);
	if (h) prof->stopEvent(h);
}

/* Send and receive to self only inside a group (alone they would wait for each other). */
static ncclResult_t add(ncclComm_t c, const void *send, void *recv, size_t n) {
	if (!c || !depth || nops == 64) return ncclInvalidArgument;
	group_comm = c;
	ops[nops++] = (struct op){send, recv, n, c, 0};
	return ncclSuccess;
}

/* tune asks c's tuner for an all-reduce of n bytes as NCCL's enqueue path does: a 7x3 cost table
 * (Tree and Ring costs from a simple latency + size/bandwidth model, the other algorithms ignored),
 * then the cheapest cell left is the choice. Returns the cell (algorithm * 3 + protocol) or -1. */
static int tune(ncclComm_t c, size_t n) {
	if (!tuner || !c->tctx || c->nranks < 2) return -1;
	float cost[7][3]; /* contiguous, passed as float ** as NCCL does */
	static const float lat[3] = {5.0f, 8.0f, 20.0f}, bw[3] = {20.0f, 60.0f, 100.0f};
	for (int a = 0; a < 7; a++) {
		for (int p = 0; p < 3; p++) cost[a][p] = a <= 1 ? lat[p] * (a ? 2.0f : 1.0f) + (float)n / (bw[p] * 1e3f) : -1.0f;
	}
	int nch = 0;
	if (tuner->getCollInfo(c->tctx, 4 /* AllReduce */, n, 1, (float **)cost, 7, 3, 0, &nch) != 0) return -1;
	int best = -1;
	for (int i = 0; i < 21; i++) {
		float v = cost[i / 3][i % 3];
		if (v >= 0 && (best < 0 || v < cost[best / 3][best % 3])) best = i;
	}
	return best;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t st) {
	(void)st;
	if (!c || t != ncclFloat || op != ncclSum) return ncclInvalidArgument;
	size_t n = count * sizeof(float);
	int cell = tune(c, n);
	if (cell >= 0) tuned[cell]++;
	if (!depth) {
		if (c->nranks != 1) return ncclInvalidArgument; /* would wait for the other ranks */
		memmove(r, s, n);
		return ncclSuccess;
	}
	if (nops == 64) return ncclInvalidArgument;
	ops[nops++] = (struct op){s, r, n, c, 1};
	return ncclSuccess;
}

ncclResult_t ncclSend(const void *b, size_t n, int t, int peer, ncclComm_t c, cudaStream_t s) {
	(void)t, (void)s;
	if (peer != 0) return ncclInvalidArgument;
	return add(c, b, NULL, n);
}

ncclResult_t ncclRecv(void *b, size_t n, int t, int peer, ncclComm_t c, cudaStream_t s) {
	(void)t, (void)s;
	if (peer != 0) return ncclInvalidArgument;
	return add(c, NULL, b, n);
}

ncclResult_t ncclGroupEnd(void) {
	if (depth == 0) return ncclInvalidArgument;
	if (--depth) return ncclSuccess;
	if (corrupt_at == -2) corrupt_at = getenv("FAKE_CORRUPT") ? atol(getenv("FAKE_CORRUPT")) : -1;
	/* all-reduces: each rank's result is the sum over the group's all-reduces (one per rank) */
	int nar = 0;
	size_t arn = 0;
	for (int i = 0; i < nops; i++)
		if (ops[i].allreduce) nar++, arn = ops[i].n;
	if (nar && ops[0].comm && ops[0].comm->xp) { /* one all-reduce per process, met in shared memory */
		struct ncclComm *c = ops[0].comm;
		size_t k = ops[0].n / sizeof(float);
		if (nar != 1 || nops != 1 || k > XP_MAXF) return ncclInvalidArgument;
		memcpy(c->xp->slot[c->rank], ops[0].send, k * sizeof(float));
		xp_barrier(c->xp, c->nranks);
		float *r = ops[0].recv;
		for (size_t j = 0; j < k; j++) {
			float v = 0;
			for (int q = 0; q < c->nranks; q++) v += c->xp->slot[q][j];
			r[j] = v;
		}
		xp_barrier(c->xp, c->nranks);
		groups_done++;
		nops = 0;
		return ncclSuccess;
	}
	if (nar) {
		static float acc[1 << 20];
		size_t k = arn / sizeof(float);
		if (k > sizeof acc / sizeof acc[0]) return ncclInvalidArgument;
		memset(acc, 0, k * sizeof(float));
		for (int i = 0; i < nops; i++)
			if (ops[i].allreduce)
				for (size_t j = 0; j < k; j++) acc[j] += ((const float *)ops[i].send)[j];
		for (int i = 0; i < nops; i++)
			if (ops[i].allreduce) memcpy(ops[i].recv, acc, k * sizeof(float));
	}
	const void *src = NULL;
	for (int i = 0; i < nops; i++)
		if (ops[i].send && !ops[i].allreduce) src = ops[i].send;
	for (int i = 0; i < nops; i++) {
		if (ops[i].allreduce) continue;
		if (ops[i].recv && src) {
			memcpy(ops[i].recv, src, ops[i].n);
			if (groups_done == corrupt_at && ops[i].n) ((unsigned char *)ops[i].recv)[0] ^= 1;
		}
		p2p_event(group_comm, ops[i].send ? "Send" : "Recv", ops[i].n);
	}
	groups_done++;
	nops = 0;
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) { return r ? "fake NCCL error" : "no error"; }
ncclResult_t ncclGetVersion(int *v) {
	*v = 22899; /* not a real NCCL version: the fake */
	return ncclSuccess;
}

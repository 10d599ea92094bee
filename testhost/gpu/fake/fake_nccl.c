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
 * It is no model of NCCL beyond that: no tuner calls (a 1-rank collective is a copy), no kernels.
 * For testhost/gpu/dry-run.sh only. FAKE_CORRUPT=N corrupts the N-th group's received bytes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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
cudaError_t cudaSetDevice(int d) { return d == 0 ? 0 : 1; }
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
	void *pctx, *tctx;
	volatile int mask;
};
typedef struct ncclComm *ncclComm_t;

static uint64_t next_id = 0x5eed0001;
static struct op { const void *send; void *recv; size_t n; } ops[64];
static int nops, depth;
static ncclComm_t group_comm;
static long groups_done, corrupt_at = -2;

ncclResult_t ncclGetUniqueId(ncclUniqueId *u) {
	memset(u, 0, sizeof *u);
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
	(void)id;
	if (nranks != 1 || rank != 0) return ncclInvalidArgument;
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c) return ncclInternalError;
	c->id = next_id++ * 0x9e3779b97f4a7c15ull;
	load_plugins();
	/* the mask lives as long as the communicator: the plugin keeps the pointer and updates it */
	if (prof && prof->init(&c->pctx, c->id, (int *)&c->mask, "fake", 1, 1, 0, logger) != 0) {
		logger(2, 0, __FILE__, __LINE__, "Profiler init failed; continuing without profiler");
		c->pctx = NULL;
	}
	if (tuner && tuner->init(&c->tctx, c->id, 1, 1, logger, NULL, NULL) != 0) c->tctx = NULL;
	logger(3, 0, __FILE__, __LINE__, "comm %p rank 0 nRanks 1 - Init COMPLETE (fake)", (void *)c);
	*out = c;
	return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c) { return c ? ncclSuccess : ncclInvalidArgument; }

ncclResult_t ncclCommDestroy(ncclComm_t c) {
	if (!c) return ncclInvalidArgument;
	if (tuner && c->tctx) tuner->finalize(c->tctx);
	if (prof && c->pctx) prof->finalize(c->pctx);
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
	ops[nops++] = (struct op){send, recv, n};
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
	const void *src = NULL;
	for (int i = 0; i < nops; i++)
		if (ops[i].send) src = ops[i].send;
	for (int i = 0; i < nops; i++) {
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

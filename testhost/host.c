/* SPDX-License-Identifier: MIT */
/*
 * host.c: an NCCL-like host for tuner plugins. It opens a plugin library as NCCL does (dlopen
 * RTLD_NOW|RTLD_LOCAL, then the versioned data symbol), creates communicators on several threads,
 * calls getCollInfo with contiguous float[7][3] cost tables (unavailable cells at -1.0) and checks
 * what comes back. On every call it enforces the invariants NCCL relies on: getCollInfo returns
 * ncclSuccess, no unavailable cell becomes available, nChannels stays 0 or in [1, 64].
 *
 *   host run      LIB VER            commands on stdin (used by the Go tests; see run_script)
 *   host selftest LIB VER            shim checks with native test programs (ncclbpf only)
 *   host policy   LIB VER EXPECT     a grid of calls checked against EXPECT (noop | size_aware)
 *   host bench    CONFIG...          medians of many calls per configuration, one child each;
 *                                    CONFIG = name=none | name=LIB[:VAR=VAL[;VAR=VAL...]]
 *   host genrules N FILE             write a rules file with N rules (CSV tuner format)
 *   host fill     LIB VER            one call as NCCL of tuner version VER (2..7) makes it: prints what
 *                                    it passed ("nccl FIELD VALUE") and the context a program saw
 *                                    ("ctx FIELD VALUE"; "chunk ..." for getChunkSize, v6+)
 *
 * Exit status 0 when every check passed; 1 with "FAIL ..." lines otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncclbpf.h"
#include "../plugin/decisions.h"
#include "nccl_abi.h"
#include "size_aware_native.h"

#define NA 7
#define NP 3
#define NCELLS 21

static int failures;
#define FAIL(...)                                                                                                      \
	do {                                                                                                           \
		fprintf(stdout, "FAIL %s:%d: ", __FILE__, __LINE__);                                                   \
		fprintf(stdout, __VA_ARGS__);                                                                          \
		fprintf(stdout, "\n");                                                                                 \
		fflush(stdout);                                                                                        \
		__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                                                    \
	} while (0)
#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond))                                                                                           \
			FAIL(__VA_ARGS__);                                                                             \
	} while (0)

/* ---- NCCL's logger ----------------------------------------------------------------------------- */

static atomic_int n_warn, n_info;
static char last_warn[1024];

static int host_verbose = -1;

static void host_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	/* Like NCCL's logger with NCCL_DEBUG unset: anything above WARN costs one test. */
	if (host_verbose < 0)
		host_verbose = getenv("HOST_VERBOSE") != NULL;
	if (level > 2 && !host_verbose) {
		atomic_fetch_add_explicit(&n_info, 1, memory_order_relaxed);
		return;
	}
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (level == 2) {
		atomic_fetch_add(&n_warn, 1);
		snprintf(last_warn, sizeof last_warn, "%s", buf);
	} else {
		atomic_fetch_add(&n_info, 1);
	}
	if (getenv("HOST_VERBOSE"))
		fprintf(stderr, "[nccl log level %d flags %#lx %s:%d] %s\n", level, flags, file, line, buf);
}

/* ---- the plugin, as NCCL loads it -------------------------------------------------------------- */

struct tuner {
	int ver; /* 2..6, 0 = no plugin */
	void *lib;
	const host_tuner_v6_t *v6;
	const host_tuner_v5_t *v5;
	const host_tuner_v4_t *v4;
	const host_tuner_v3_t *v3;
	const host_tuner_v2_t *v2;
};

static int open_tuner(struct tuner *t, const char *path, int ver) {
	memset(t, 0, sizeof *t);
	t->ver = ver;
	t->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!t->lib) {
		fprintf(stdout, "FAIL dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	char sym[32];
	snprintf(sym, sizeof sym, "ncclTunerPlugin_v%d", ver);
	void *s = dlsym(t->lib, sym);
	if (!s) {
		fprintf(stdout, "FAIL %s: no symbol %s\n", path, sym);
		return -1;
	}
	switch (ver) {
	case 6: t->v6 = s; break;
	case 5: t->v5 = s; break;
	case 4: t->v4 = s; break;
	case 3: t->v3 = s; break;
	case 2: t->v2 = s; break;
	default: fprintf(stdout, "FAIL unknown version %d\n", ver); return -1;
	}
	return 0;
}

/* t_init_rc calls the tuner's init and returns its result; *ctx is what init left there. */
static ncclResult_t t_init_rc(struct tuner *t, void **ctxp, uint64_t comm_id, int n_ranks, int n_nodes, int nvl_domains,
                              int nvl_min, int nvl_max) {
	void *ctx = (void *)0x1; /* must be overwritten */
	host_nvl_info_t nvl = {nvl_domains, nvl_min, nvl_max};
	static host_constants_t consts; /* NCCL keeps one per communicator; contents irrelevant here */
	ncclResult_t rc = ncclInternalError;
	switch (t->ver) {
	case 6: rc = t->v6->init(&ctx, comm_id, n_ranks, n_nodes, host_logger, &nvl, &consts); break;
	case 5: rc = t->v5->init(&ctx, comm_id, n_ranks, n_nodes, host_logger, &nvl, &consts); break;
	case 4: rc = t->v4->init(n_ranks, n_nodes, host_logger, &ctx); break;
	case 3: rc = t->v3->init(n_ranks, n_nodes, host_logger, &ctx); break;
	case 2: rc = t->v2->init(n_ranks, n_nodes, host_logger, &ctx); break;
	}
	*ctxp = ctx;
	return rc;
}

static void *t_init(struct tuner *t, uint64_t comm_id, int n_ranks, int n_nodes, int nvl_domains, int nvl_min,
                    int nvl_max) {
	void *ctx;
	ncclResult_t rc = t_init_rc(t, &ctx, comm_id, n_ranks, n_nodes, nvl_domains, nvl_min, nvl_max);
	CHECK(rc == ncclSuccess, "init returned %d", rc);
	CHECK(ctx != (void *)0x1, "init did not set the context");
	return ctx;
}

static void t_fin(struct tuner *t, void *ctx) {
	ncclResult_t rc = ncclInternalError;
	switch (t->ver) {
	case 6: rc = t->v6->finalize(ctx); break;
	case 5: rc = t->v5->finalize(ctx); break;
	case 4: rc = t->v4->destroy(ctx); break;
	case 3: rc = t->v3->destroy(ctx); break;
	case 2: rc = t->v2->destroy(ctx); break;
	}
	CHECK(rc == ncclSuccess, "finalize returned %d", rc);
}

/* One getCollInfo call for v3..v6, with NCCL's invariants checked. */
static ncclResult_t t_call(struct tuner *t, void *ctx, int coll, size_t n_bytes, int pipe_ops, int reg_buff,
                           float table[NA][NP], int *nch) {
	float before[NA][NP];
	memcpy(before, table, sizeof before);
	*nch = 0;
	ncclResult_t rc = ncclSuccess;
	switch (t->ver) {
	case 6: rc = t->v6->getCollInfo(ctx, coll, n_bytes, pipe_ops, (float **)table, NA, NP, reg_buff, nch); break;
	case 5: rc = t->v5->getCollInfo(ctx, coll, n_bytes, pipe_ops, (float **)table, NA, NP, reg_buff, nch); break;
	case 4: rc = t->v4->getCollInfo(ctx, coll, n_bytes, pipe_ops, (float **)table, NA, NP, reg_buff, nch); break;
	case 3: rc = t->v3->getCollInfo(ctx, coll, n_bytes, pipe_ops, (float **)table, NA, NP, nch); break;
	default: FAIL("t_call with version %d", t->ver); return ncclInternalError;
	}
	CHECK(rc == ncclSuccess, "getCollInfo returned %d", rc);
	for (int a = 0; a < NA; a++)
		for (int p = 0; p < NP; p++)
			CHECK(before[a][p] >= 0.0f || table[a][p] < 0.0f,
			      "unavailable cell (%d,%d) was enabled: %g -> %g", a, p, before[a][p], table[a][p]);
	CHECK(*nch >= 0 && *nch <= 64, "nChannels %d out of range", *nch);
	return rc;
}

/* ---- realistic cost tables --------------------------------------------------------------------- */

enum { TBL_NVLS = 1, TBL_COLLNET = 2, TBL_NO_RING_SIMPLE = 4, TBL_NO_LL128 = 8 };

/* A cost table shaped like NCCL's (µs = latency + bytes / bandwidth), with the cells NCCL marks
 * unavailable for the collective and topology at -1.0. */
static void model_table(float t[NA][NP], int coll, size_t n_bytes, int n_ranks, int n_nodes, int flags) {
	static const double lat[NP] = {4.0, 7.5, 11.0};     /* LL, LL128, Simple */
	static const double bw[NP] = {12.0, 90.0, 140.0};   /* GB/s */
	static const double alat[NA] = {1.3, 1.0, 0.9, 1.1, 0.8, 1.2, 1.4};
	static const double abw[NA] = {0.9, 1.0, 1.3, 1.1, 1.6, 1.2, 0.8};
	for (int a = 0; a < NA; a++)
		for (int p = 0; p < NP; p++) {
			double steps = a == NCCLBPF_ALGO_RING ? (double)(n_ranks - 1) : 2.0;
			t[a][p] = (float)(lat[p] * alat[a] * (1.0 + steps / 8.0) + (double)n_bytes / (1000.0 * bw[p] * abw[a]));
		}
	for (int a = 0; a < NA; a++)
		for (int p = 0; p < NP; p++) {
			int off = 0;
			if (a == NCCLBPF_ALGO_TREE && coll != NCCLBPF_COLL_ALLREDUCE)
				off = 1;
			if ((a == NCCLBPF_ALGO_COLLNET_DIRECT || a == NCCLBPF_ALGO_COLLNET_CHAIN) && !(flags & TBL_COLLNET))
				off = 1;
			if ((a == NCCLBPF_ALGO_NVLS || a == NCCLBPF_ALGO_NVLS_TREE) &&
			    (!(flags & TBL_NVLS) || p != NCCLBPF_PROTO_SIMPLE))
				off = 1;
			if (a == NCCLBPF_ALGO_PAT &&
			    (n_nodes < 2 || (coll != NCCLBPF_COLL_ALLGATHER && coll != NCCLBPF_COLL_REDUCESCATTER)))
				off = 1;
			if (p == NCCLBPF_PROTO_LL128 && (flags & TBL_NO_LL128))
				off = 1;
			if (a == NCCLBPF_ALGO_RING && p == NCCLBPF_PROTO_SIMPLE && (flags & TBL_NO_RING_SIMPLE))
				off = 1;
			if (off)
				t[a][p] = -1.0f;
		}
}

/* NCCL's own pick after the tuner: scan algorithms then protocols, strictly smallest non-negative. */
static void nccl_pick(float t[NA][NP], int *algo, int *proto) {
	float best = 3.4e38f;
	*algo = *proto = -1;
	for (int a = 0; a < NA; a++)
		for (int p = 0; p < NP; p++)
			if (t[a][p] >= 0.0f && t[a][p] < best) {
				best = t[a][p];
				*algo = a;
				*proto = p;
			}
}

static uint32_t fbits(float f) {
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* ---- optional ncclbpf-only entry points -------------------------------------------------------- */

typedef void (*set_program_fn)(int slot, uintptr_t fn);
#define NCCLBPF_SLOT_TUNER_HOST 0      /* shim.h: NCCLBPF_SLOT_TUNER */
#define NCCLBPF_SLOT_CHUNK_SIZE_HOST 1 /* shim.h: NCCLBPF_SLOT_CHUNK_SIZE */

struct ncclbpf_tuner_stats_host { /* mirror of shim.h's struct ncclbpf_tuner_stats */
	uint64_t comms_live, comms_total, calls, policy_calls, applied, rejected, clamped, chunk_calls, chunk_applied,
	    chunk_rejected;
	int32_t load_status, reserved;
};

static struct ncclbpf_tuner_stats_host get_stats(struct tuner *t) {
	struct ncclbpf_tuner_stats_host s;
	memset(&s, 0, sizeof s);
	void (*f)(struct ncclbpf_tuner_stats_host *) = (void (*)(struct ncclbpf_tuner_stats_host *))dlsym(t->lib, "ncclbpf_tuner_get_stats");
	if (f)
		f(&s);
	else
		FAIL("ncclbpf_tuner_get_stats not exported");
	return s;
}

/* ---- run: a command script on stdin ------------------------------------------------------------ */

#define MAX_COMMS 64

/*
 * Commands (one per line; replies on stdout, one line each):
 *   init C COMMID NRANKS NNODES NVLDOMAINS MINR MAXR   -> "ok"
 *   tryinit C COMMID NRANKS NNODES NVLDOMAINS MINR MAXR -> "init RC" (init's result; no failure if not 0)
 *   call C COLL NBYTES PIPEOPS REGBUFF T0..T20        -> "res NCH B0..B20" (B = float bits, hex)
 *   call2 C COLL NBYTES COLLNET NVLS PIPEOPS          -> "res2 ALGO PROTO NCH"   (tuner v2)
 *   chunk C COLL NBYTES ALGO PROTO NCH CHUNK          -> "chunk N"              (tuner v6)
 *   fin C                                             -> "ok"
 *   stats                                             -> "stats CALLS POLICYCALLS APPLIED REJECTED CLAMPED LOAD"
 *   warns                                             -> "warns NWARN"
 *   initus                                            -> "initus US" (how long the last init took)
 *   goready                                           -> "goready 1" once libncclbpf.so's Go runtime runs
 */
static double last_init_us;
static int run_script(struct tuner *t) {
	void *comms[MAX_COMMS] = {0};
	char line[4096];
	while (fgets(line, sizeof line, stdin)) {
		char *save = NULL, *cmd = strtok_r(line, " \t\n", &save);
		if (!cmd || cmd[0] == '#')
			continue;
		long v[32];
		int n = 0;
		float f[NCELLS];
		int nf = 0;
		char *tok;
		int is_call = strcmp(cmd, "call") == 0;
		while ((tok = strtok_r(NULL, " \t\n", &save)) && n < 32) {
			if (is_call && n >= 5 && nf < NCELLS)
				f[nf++] = strtof(tok, NULL);
			else
				v[n++] = strtol(tok, NULL, 0);
		}
		if (strcmp(cmd, "init") == 0 && n == 7 && v[0] >= 0 && v[0] < MAX_COMMS) {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			comms[v[0]] = t_init(t, (uint64_t)v[1], (int)v[2], (int)v[3], (int)v[4], (int)v[5], (int)v[6]);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			last_init_us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
			printf("ok\n");
		} else if (strcmp(cmd, "tryinit") == 0 && n == 7 && v[0] >= 0 && v[0] < MAX_COMMS) {
			void *ctx = NULL;
			ncclResult_t rc = t_init_rc(t, &ctx, (uint64_t)v[1], (int)v[2], (int)v[3], (int)v[4], (int)v[5], (int)v[6]);
			comms[v[0]] = rc == ncclSuccess ? ctx : NULL;
			printf("init %d\n", (int)rc);
		} else if (strcmp(cmd, "goready") == 0) {
			/* Any call into Go waits until the Go runtime has started (dlopen only begins that):
			 * after this, "init" times the policy load alone. */
			int (*pending)(void) = (int (*)(void))dlsym(t->lib, "ncclbpfTestingReloadPending");
			if (pending)
				pending();
			printf("goready %d\n", pending != NULL);
		} else if (strcmp(cmd, "initus") == 0) {
			printf("initus %.0f\n", last_init_us);
		} else if (is_call && n == 5 && nf == NCELLS && v[0] >= 0 && v[0] < MAX_COMMS) {
			float tbl[NA][NP];
			memcpy(tbl, f, sizeof tbl);
			int nch = 0;
			t_call(t, comms[v[0]], (int)v[1], (size_t)v[2], (int)v[3], (int)v[4], tbl, &nch);
			printf("res %d", nch);
			for (int i = 0; i < NCELLS; i++)
				printf(" %08x", fbits(((float *)tbl)[i]));
			printf("\n");
		} else if (strcmp(cmd, "call2") == 0 && n == 6 && t->ver == 2 && v[0] >= 0 && v[0] < MAX_COMMS) {
			int algo = -1, proto = -1, nch = 0;
			ncclResult_t rc = t->v2->getCollInfo(comms[v[0]], (int)v[1], (size_t)v[2], (int)v[3], (int)v[4],
			                                     (int)v[5], &algo, &proto, &nch);
			CHECK(rc == ncclSuccess, "getCollInfo v2 returned %d", rc);
			printf("res2 %d %d %d\n", algo, proto, nch);
		} else if (strcmp(cmd, "chunk") == 0 && n == 7 && t->ver == 6 && v[0] >= 0 && v[0] < MAX_COMMS) {
			size_t chunk = (size_t)v[6];
			ncclResult_t rc = t->v6->getChunkSize(comms[v[0]], (int)v[1], (size_t)v[2], (int)v[3], (int)v[4],
			                                      (int)v[5], &chunk);
			CHECK(rc == ncclSuccess, "getChunkSize returned %d", rc);
			printf("chunk %zu\n", chunk);
		} else if (strcmp(cmd, "fin") == 0 && n == 1 && v[0] >= 0 && v[0] < MAX_COMMS) {
			t_fin(t, comms[v[0]]);
			comms[v[0]] = NULL;
			printf("ok\n");
		} else if (strcmp(cmd, "stats") == 0 && !dlsym(t->lib, "ncclbpf_tuner_get_stats")) {
			printf("stats -\n"); /* a production build exports NCCL's symbols only */
		} else if (strcmp(cmd, "stats") == 0) {
			struct ncclbpf_tuner_stats_host s = get_stats(t);
			printf("stats %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d\n", s.calls,
			       s.policy_calls, s.applied, s.rejected, s.clamped, s.load_status);
		} else if (strcmp(cmd, "warns") == 0) {
			printf("warns %d\n", atomic_load(&n_warn));
		} else {
			FAIL("bad command %s (%d numbers)", cmd, n);
		}
		fflush(stdout);
	}
	return failures ? 1 : 0;
}

/* ---- selftest: the shim with native test programs ---------------------------------------------- */

/* Programs the host publishes in the library's slots: slot words keep hint bits in the low 3 bits of
 * an entry, so entries are 8-byte aligned (16 here; arm64 aligns functions to 4 bytes only). */
#define PROG_FN static __attribute__((aligned(16))) uint64_t

PROG_FN p_none_set(void *vctx) { return NCCLBPF_TUNER_APPLY; }
PROG_FN p_unavail(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = NCCLBPF_ALGO_NVLS;
	x->protocol = NCCLBPF_PROTO_LL;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_range(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = 9;
	x->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_negch(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = NCCLBPF_ALGO_RING;
	x->protocol = NCCLBPF_PROTO_SIMPLE;
	x->n_channels = -4;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_bigch(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = NCCLBPF_ALGO_RING;
	x->protocol = NCCLBPF_PROTO_SIMPLE;
	x->n_channels = 1000;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_row(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = NCCLBPF_ALGO_RING;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_col(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->protocol = NCCLBPF_PROTO_LL128;
	x->n_channels = 3;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_ignored(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = NCCLBPF_ALGO_RING;
	x->protocol = NCCLBPF_PROTO_SIMPLE;
	x->n_channels = 5;
	return NCCLBPF_TUNER_DEFAULT;
}
PROG_FN p_collnet_ch(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = NCCLBPF_ALGO_COLLNET_DIRECT;
	x->protocol = NCCLBPF_PROTO_SIMPLE;
	x->n_channels = 8;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_ch_only(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->n_channels = 8;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_ring_ll(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	x->algorithm = NCCLBPF_ALGO_RING;
	x->protocol = NCCLBPF_PROTO_LL;
	return NCCLBPF_TUNER_APPLY;
}
/* Checks the context it is given against what the host passed (encoded by the caller). */
PROG_FN p_echo(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	/* channels encode (call_seq + n_ranks), so cross-talk between communicators shows up */
	x->n_channels = (int)((x->call_seq + x->n_ranks) % 63) + 1;
	/* the cost table must arrive bit for bit: cell (0,0) carries n_bytes as a float */
	if (x->cost[0][0] != fbits((float)x->n_bytes))
		x->n_channels = 64; /* makes the caller's check fail */
	if ((x->abi_version >= 5 && x->comm_id != 1000u + x->n_ranks / 2) || x->num_pipe_ops != 1 || x->coll_type != NCCLBPF_COLL_ALLGATHER)
		x->n_channels = 64;
	uint32_t m = 0;
	for (int i = 0; i < NCELLS; i++)
		m |= (uint32_t)NCCLBPF_COST_AVAILABLE(((uint32_t *)x->cost)[i]) << i;
	if (m != x->avail_mask)
		x->n_channels = 64;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN c_set(void *vctx) {
	struct ncclbpf_chunk_ctx *x = vctx;
	x->new_chunk_size = x->chunk_size * 2;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN c_small(void *vctx) {
	struct ncclbpf_chunk_ctx *x = vctx;
	x->new_chunk_size = 8;
	return NCCLBPF_TUNER_APPLY;
}

static int tables_equal(float a[NA][NP], float b[NA][NP]) { return memcmp(a, b, sizeof(float) * NCELLS) == 0; }

/* getCollInfo (v3..v6) with arguments as given, NULLs included: no invariant checks. */
static ncclResult_t raw_call(struct tuner *t, void *ctx, float *table, int num_algo, int num_proto, int *nch) {
	switch (t->ver) {
	case 6: return t->v6->getCollInfo(ctx, NCCLBPF_COLL_ALLREDUCE, 8u << 20, 1, (float **)table, num_algo, num_proto, 0, nch);
	case 5: return t->v5->getCollInfo(ctx, NCCLBPF_COLL_ALLREDUCE, 8u << 20, 1, (float **)table, num_algo, num_proto, 0, nch);
	case 4: return t->v4->getCollInfo(ctx, NCCLBPF_COLL_ALLREDUCE, 8u << 20, 1, (float **)table, num_algo, num_proto, 0, nch);
	case 3: return t->v3->getCollInfo(ctx, NCCLBPF_COLL_ALLREDUCE, 8u << 20, 1, (float **)table, num_algo, num_proto, nch);
	}
	return ncclInternalError;
}

/* Degenerate arguments (NULL context, table, nChannels, algorithm/protocol or chunk pointers; an
 * empty table), with a program that always decides: every entry point returns ncclSuccess, writes
 * nothing it was not given, and does not crash. NCCL passes none of these today; a future NCCL or
 * another host might. */
static void null_args_test(struct tuner *t, set_program_fn set, void *c, float base[NA][NP]) {
	float tbl[NA][NP];
	int nch;
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_bigch); /* ring/simple, 1000 channels */
	if (t->ver == 2) {
		int algo = -1, proto = -1;
		nch = 0;
		CHECK(t->v2->getCollInfo(NULL, NCCLBPF_COLL_ALLREDUCE, 1024, 0, 0, 1, &algo, &proto, &nch) == ncclSuccess &&
		          algo == -1 && proto == -1 && nch == 0,
		      "v2 NULL context: %d/%d/%d", algo, proto, nch);
		CHECK(t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, 1024, 0, 0, 1, NULL, NULL, NULL) == ncclSuccess,
		      "v2 NULL outputs: not ncclSuccess");
		CHECK(t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, 1024, 0, 0, 1, &algo, &proto, NULL) == ncclSuccess &&
		          algo == 1 && proto == 2,
		      "v2 NULL nChannels: %d/%d", algo, proto);
	} else {
		nch = 0;
		memcpy(tbl, base, sizeof tbl);
		CHECK(raw_call(t, NULL, &tbl[0][0], NA, NP, &nch) == ncclSuccess && nch == 0 && tables_equal(tbl, base),
		      "v%d NULL context: not ncclSuccess or something written", t->ver);
		CHECK(raw_call(t, c, NULL, NA, NP, &nch) == ncclSuccess && nch == 0, "v%d NULL table: rc or nChannels %d",
		      t->ver, nch);
		CHECK(raw_call(t, c, &tbl[0][0], 0, 0, &nch) == ncclSuccess && nch == 0 && tables_equal(tbl, base),
		      "v%d empty table: not ncclSuccess or something written", t->ver);
		CHECK(raw_call(t, c, &tbl[0][0], NA, NP, NULL) == ncclSuccess && tbl[1][2] == 0.0f,
		      "v%d NULL nChannels: not ncclSuccess or the cell not applied", t->ver);
		CHECK(raw_call(t, c, NULL, NA, NP, NULL) == ncclSuccess, "v%d NULL table and nChannels", t->ver);
	}
	if (t->ver == 6) {
		size_t chunk = 4096;
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, (uintptr_t)c_set);
		CHECK(t->v6->getChunkSize(c, NCCLBPF_COLL_ALLREDUCE, 1024, 1, 2, 1, NULL) == ncclSuccess,
		      "getChunkSize NULL chunkSize");
		CHECK(t->v6->getChunkSize(NULL, NCCLBPF_COLL_ALLREDUCE, 1024, 1, 2, 1, &chunk) == ncclSuccess && chunk == 4096,
		      "getChunkSize NULL context: %zu", chunk);
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, 0);
	}
	set(NCCLBPF_SLOT_TUNER_HOST, 0);
	ncclResult_t rc = ncclInternalError;
	switch (t->ver) {
	case 6: rc = t->v6->finalize(NULL); break;
	case 5: rc = t->v5->finalize(NULL); break;
	case 4: rc = t->v4->destroy(NULL); break;
	case 3: rc = t->v3->destroy(NULL); break;
	case 2: rc = t->v2->destroy(NULL); break;
	}
	CHECK(rc == ncclSuccess, "finalize(NULL) returned %d", rc);
	/* init with no place for the context: success (NCCL would then pass NULL to the other calls) */
	switch (t->ver) {
	case 6: rc = t->v6->init(NULL, 1, 2, 1, host_logger, NULL, NULL); break;
	case 5: rc = t->v5->init(NULL, 1, 2, 1, host_logger, NULL, NULL); break;
	case 4: rc = t->v4->init(2, 1, host_logger, NULL); break;
	case 3: rc = t->v3->init(2, 1, host_logger, NULL); break;
	case 2: rc = t->v2->init(2, 1, host_logger, NULL); break;
	}
	CHECK(rc == ncclSuccess, "init(NULL context) returned %d", rc);
}

struct thr {
	struct tuner *t;
	int idx;
	void *ctx;
	pthread_barrier_t *bar;
	long calls;
};

static void *thread_main(void *arg) {
	struct thr *th = arg;
	int n_ranks = 2 + th->idx;
	pthread_barrier_wait(th->bar);
	/* pairs of threads share a commId, as ncclCommInitAll's communicators do */
	th->ctx = t_init(th->t, 1000u + (uint64_t)n_ranks / 2, n_ranks, 1, 1, n_ranks, n_ranks);
	pthread_barrier_wait(th->bar); /* main installs the program */
	pthread_barrier_wait(th->bar);
	for (long i = 0; i < th->calls; i++) {
		float tbl[NA][NP];
		size_t n_bytes = 1024 + (size_t)(i % 5000) * 512 + (size_t)th->idx;
		model_table(tbl, NCCLBPF_COLL_ALLGATHER, n_bytes, n_ranks, 1, (int)(i % 3));
		tbl[0][0] = (float)n_bytes;
		int nch = 0;
		t_call(th->t, th->ctx, NCCLBPF_COLL_ALLGATHER, n_bytes, 1, 0, tbl, &nch);
		int want = (int)((i + n_ranks) % 63) + 1;
		int pa, pp;
		nccl_pick(tbl, &pa, &pp);
		if (pa == NCCLBPF_ALGO_COLLNET_DIRECT || pa == NCCLBPF_ALGO_COLLNET_CHAIN)
			want = 0; /* channel counts are not passed for CollNet (see selftest) */
		if (nch != want) {
			FAIL("thread %d call %ld: nChannels %d, want %d (cross-talk or bad context)", th->idx, i, nch, want);
			break;
		}
	}
	return NULL;
}

/* Grace periods: two programs swapped under load; a program that has been retired (unpublished,
 * then ncclbpf_slot_synchronize returned) must never run again until republished. */
static atomic_int retired[2], ran_retired;
static atomic_long ran[2];
static uint64_t p_gen(int g, void *vctx) {
	if (atomic_load(&retired[g]))
		atomic_fetch_add(&ran_retired, 1);
	atomic_fetch_add_explicit(&ran[g], 1, memory_order_relaxed);
	for (volatile int spin = 0; spin < 50; spin++) /* stay inside a while */
		;
	if (atomic_load(&retired[g]))
		atomic_fetch_add(&ran_retired, 1);
	return NCCLBPF_TUNER_DEFAULT;
}
PROG_FN p_gen0(void *vctx) { return p_gen(0, vctx); }
PROG_FN p_gen1(void *vctx) { return p_gen(1, vctx); }
static atomic_int swap_stop;
static void *swap_caller(void *arg) {
	struct thr *th = arg;
	while (!atomic_load(&swap_stop)) {
		float tbl[NA][NP];
		model_table(tbl, NCCLBPF_COLL_ALLREDUCE, 4096, 4, 1, 0);
		int nch;
		t_call(th->t, th->ctx, NCCLBPF_COLL_ALLREDUCE, 4096, 1, 0, tbl, &nch);
	}
	return NULL;
}

static void grace_period_test(struct tuner *t, set_program_fn set) {
	uintptr_t (*publish)(int, uintptr_t) = (uintptr_t(*)(int, uintptr_t))dlsym(t->lib, "ncclbpf_slot_publish");
	int (*sync)(void) = (int (*)(void))dlsym(t->lib, "ncclbpf_slot_synchronize");
	if (!publish || !sync) {
		FAIL("ncclbpf_slot_publish/synchronize not exported");
		return;
	}
	enum { NC = 3 };
	struct thr th[NC];
	pthread_t tid[NC];
	atomic_store(&swap_stop, 0);
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_gen0);
	for (int i = 0; i < NC; i++) {
		th[i] = (struct thr){t, i, t_init(t, 500 + (uint64_t)i, 4, 1, 1, 4, 4), NULL, 0};
		pthread_create(&tid[i], NULL, swap_caller, &th[i]);
	}
	uintptr_t progs[2] = {(uintptr_t)p_gen0, (uintptr_t)p_gen1};
	int cur = 0, swaps = 0, unsynced = 0;
	for (int k = 0; k < 400; k++) {
		int nxt = 1 - cur;
		atomic_store(&retired[nxt], 0);
		publish(NCCLBPF_SLOT_TUNER_HOST, progs[nxt]);
		if (sync() != 0) {
			unsynced++;
			break;
		}
		atomic_store(&retired[cur], 1); /* no thread is in it and none can enter it */
		cur = nxt;
		swaps++;
		usleep(100);
	}
	atomic_store(&swap_stop, 1);
	for (int i = 0; i < NC; i++) {
		pthread_join(tid[i], NULL);
		t_fin(t, th[i].ctx);
	}
	set(NCCLBPF_SLOT_TUNER_HOST, 0);
	atomic_store(&retired[0], 0);
	atomic_store(&retired[1], 0);
	if (unsynced) {
		printf("grace periods: membarrier unavailable, not tested\n");
		return;
	}
	CHECK(atomic_load(&ran_retired) == 0, "a retired program ran %d times after its grace period",
	      atomic_load(&ran_retired));
	CHECK(atomic_load(&ran[0]) > 0 && atomic_load(&ran[1]) > 0, "programs ran %ld and %ld times", atomic_load(&ran[0]),
	      atomic_load(&ran[1]));
	printf("grace periods: %d swaps under %d calling threads, %ld+%ld calls, %d calls into retired code\n", swaps, NC,
	       atomic_load(&ran[0]), atomic_load(&ran[1]), atomic_load(&ran_retired));
}

static int selftest(struct tuner *t, const char *path) {
	set_program_fn set = (set_program_fn)dlsym(t->lib, "ncclbpf_testing_set_program");
	if (!set) {
		FAIL("ncclbpf_testing_set_program not exported");
		return 1;
	}
	/* Every version's symbol is there, named ncclbpf. */
	for (int v = 2; v <= 7; v++) {
		char sym[32];
		snprintf(sym, sizeof sym, "ncclTunerPlugin_v%d", v);
		const char *const *name = dlsym(t->lib, sym);
		CHECK(name && *name && strcmp(*name, "ncclbpf") == 0, "%s missing or misnamed", sym);
	}

	/* 1. Eight threads init concurrently (the first init loads the policy), then call concurrently. */
	enum { NT = 8 };
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, NT + 1);
	pthread_t tid[NT];
	struct thr th[NT];
	int concurrent = t->ver >= 3;
	if (concurrent) {
		for (int i = 0; i < NT; i++) {
			th[i] = (struct thr){t, i, NULL, &bar, 50000};
			pthread_create(&tid[i], NULL, thread_main, &th[i]);
		}
		pthread_barrier_wait(&bar); /* start init */
		pthread_barrier_wait(&bar); /* inits done */
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_echo);
		pthread_barrier_wait(&bar); /* go */
		for (int i = 0; i < NT; i++)
			pthread_join(tid[i], NULL);
		for (int i = 0; i < NT; i++)
			t_fin(t, th[i].ctx);
	}
	pthread_barrier_destroy(&bar);

	/* 2. Swaps under load with grace periods (what hot reload relies on). */
	if (t->ver == 5)
		grace_period_test(t, set);

	/* 3. Decisions on one communicator: 4 ranks, one node; no NVLS, so NVLS cells are -1. */
	void *c = t_init(t, 42, 4, 1, 1, 4, 4);
	size_t nb = 8u << 20;
	float base[NA][NP], tbl[NA][NP];
	model_table(base, NCCLBPF_COLL_ALLREDUCE, nb, 4, 1, 0);
	int nch, w0;
	struct ncclbpf_tuner_stats_host s0, s1;

	null_args_test(t, set, c, base);

	if (t->ver == 2) {
		int algo, proto;
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_negch); /* ring/simple but negative channels */
		algo = proto = -1;
		nch = 0;
		t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, nb, 0, 0, 1, &algo, &proto, &nch);
		CHECK(algo == -1 && proto == -1 && nch == 0, "v2 negative channels applied: %d %d %d", algo, proto, nch);
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_bigch);
		t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, nb, 0, 0, 1, &algo, &proto, &nch);
		CHECK(algo == 1 && proto == 2 && nch == 64, "v2 ring/simple: %d %d %d", algo, proto, nch);
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_unavail); /* NVLS without nvlsSupport */
		algo = proto = -1;
		nch = 0;
		t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, nb, 0, 0, 1, &algo, &proto, &nch);
		CHECK(algo == -1 && proto == -1 && nch == 0, "v2 NVLS without support applied: %d %d", algo, proto);
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_row); /* algorithm only: v2 cannot say that */
		t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, nb, 0, 0, 1, &algo, &proto, &nch);
		CHECK(algo == -1 && proto == -1, "v2 partial decision applied: %d %d", algo, proto);
		/* CollNet: NCCL takes a CollNet task's channel count unchecked; only its default is safe */
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_collnet_ch);
		algo = proto = -1;
		nch = 0;
		t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, 1, &algo, &proto, &nch);
		CHECK(algo == 2 && proto == 2 && nch == 0, "v2 CollNet with channels: %d %d %d", algo, proto, nch);
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_ch_only);
		algo = proto = -1;
		t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, 1, &algo, &proto, &nch);
		CHECK(algo == -1 && nch == 0, "v2 channels only, CollNet supported: %d %d", algo, nch);
		t->v2->getCollInfo(c, NCCLBPF_COLL_ALLREDUCE, nb, 0, 0, 1, &algo, &proto, &nch);
		CHECK(algo == -1 && nch == 8, "v2 channels only, no CollNet: %d %d", algo, nch);
		s1 = get_stats(t);
		CHECK(s1.rejected == 3, "v2: %" PRIu64 " rejections, want 3", s1.rejected);
		t_fin(t, c);
		set(NCCLBPF_SLOT_TUNER_HOST, 0);
		printf("selftest v2: %s\n", failures ? "FAILED" : "ok");
		return failures ? 1 : 0;
	}

	/* no program: nothing changes */
	set(NCCLBPF_SLOT_TUNER_HOST, 0);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	CHECK(tables_equal(tbl, base) && nch == 0, "no program changed the table");

	/* a program that sets nothing: nothing changes */
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_none_set);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	CHECK(tables_equal(tbl, base) && nch == 0, "leave-it program changed the table");

	/* unavailable cell: dropped, counted, logged once */
	s0 = get_stats(t);
	w0 = atomic_load(&n_warn);
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_unavail);
	for (int i = 0; i < 3; i++) {
		memcpy(tbl, base, sizeof tbl);
		t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
		CHECK(tables_equal(tbl, base) && nch == 0, "unavailable cell: table changed");
	}
	s1 = get_stats(t);
	CHECK(s1.rejected - s0.rejected == 3, "unavailable: %" PRIu64 " rejections, want 3", s1.rejected - s0.rejected);
	CHECK(atomic_load(&n_warn) - w0 == 1, "unavailable: %d warnings, want 1", atomic_load(&n_warn) - w0);

	/* out of range algorithm; negative channels: dropped */
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_range);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	CHECK(tables_equal(tbl, base) && nch == 0, "out-of-range algorithm applied");
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_negch);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	CHECK(tables_equal(tbl, base) && nch == 0, "negative channels applied");

	/* return 1: outputs ignored */
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_ignored);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	CHECK(tables_equal(tbl, base) && nch == 0, "TUNER_DEFAULT outputs applied");

	/* ring/simple with 1000 channels: cell -> 0.0, channels clamped to 64, NCCL picks ring/simple */
	s0 = get_stats(t);
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_bigch);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	int a, p;
	nccl_pick(tbl, &a, &p);
	CHECK(a == 1 && p == 2 && tbl[1][2] == 0.0f && nch == 64, "ring/simple x1000: got %d/%d nch %d", a, p, nch);
	s1 = get_stats(t);
	CHECK(s1.clamped - s0.clamped == 1 && s1.applied - s0.applied == 1, "clamp not counted");

	/* ring/LL: also fine (LL is available here) */
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_ring_ll);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	nccl_pick(tbl, &a, &p);
	CHECK(a == 1 && p == 0 && nch == 0, "ring/LL: got %d/%d", a, p);

	/* algorithm only: other rows disabled, the ring row untouched, NCCL picks within it */
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_row);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			CHECK(i == 1 ? tbl[i][j] == base[i][j] : tbl[i][j] < 0.0f, "row restriction: cell %d,%d = %g", i, j,
			      tbl[i][j]);

	/* protocol only (+3 channels): other columns disabled */
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_col);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	nccl_pick(tbl, &a, &p);
	CHECK(p == 1 && nch == 3, "column restriction: picked %d/%d nch %d", a, p, nch);

	/* protocol only, but that column is entirely unavailable: dropped */
	float nol[NA][NP];
	model_table(nol, NCCLBPF_COLL_ALLREDUCE, nb, 4, 1, TBL_NO_LL128);
	memcpy(tbl, nol, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	CHECK(tables_equal(tbl, nol) && nch == 0, "restriction to an unavailable column applied");

	/* CollNet: NCCL takes a CollNet task's channel count unchecked as its channel span, and a tuner
	 * does not know the communicator's channels: the count is dropped (counted, logged once), the
	 * rest of the decision applied. Channels-only decisions: dropped when NCCL's pick is CollNet. */
	{
		float cn[NA][NP];
		model_table(cn, NCCLBPF_COLL_ALLREDUCE, nb, 4, 1, TBL_COLLNET);
		s0 = get_stats(t);
		w0 = atomic_load(&n_warn);
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_collnet_ch);
		for (int i = 0; i < 2; i++) {
			memcpy(tbl, cn, sizeof tbl);
			t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
			nccl_pick(tbl, &a, &p);
			CHECK(a == 2 && p == 2 && nch == 0, "CollNet with 8 channels: got %d/%d nch %d, want 2/2 nch 0", a, p, nch);
		}
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_ch_only);
		memcpy(tbl, cn, sizeof tbl);
		tbl[2][1] = 0.25f; /* NCCL's pick: CollNet direct / LL128 */
		t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
		CHECK(nch == 0, "channels only, NCCL picks CollNet: nch %d", nch);
		memcpy(tbl, cn, sizeof tbl);
		tbl[1][2] = 0.25f; /* NCCL's pick: Ring / Simple */
		t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
		CHECK(nch == 8, "channels only, NCCL picks Ring: nch %d", nch);
		s1 = get_stats(t);
		CHECK(s1.clamped - s0.clamped == 3 && s1.applied - s0.applied == 4 && s1.rejected == s0.rejected,
		      "CollNet channels: clamped %" PRIu64 " applied %" PRIu64 " rejected %" PRIu64, s1.clamped - s0.clamped,
		      s1.applied - s0.applied, s1.rejected - s0.rejected);
		/* logged once per process: here, unless the concurrent phase already did */
		CHECK(atomic_load(&n_warn) - w0 <= 1, "CollNet channels: %d warnings, want at most 1", atomic_load(&n_warn) - w0);
	}

	/* 3. getChunkSize (v6) */
	if (t->ver == 6) {
		size_t chunk = 131072;
		t->v6->getChunkSize(c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 2, 1, &chunk);
		CHECK(chunk == 131072, "no chunk program changed the chunk: %zu", chunk);
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, (uintptr_t)c_set);
		t->v6->getChunkSize(c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 2, 1, &chunk);
		CHECK(chunk == 262144, "chunk program not applied: %zu", chunk);
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, (uintptr_t)c_small);
		t->v6->getChunkSize(c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 2, 1, &chunk);
		CHECK(chunk == 262144, "chunk below the grain applied: %zu", chunk);

		/* A collective left to NCCL has no decision record of its own; a chunk size set for it
		 * records it (left to NCCL, with the chunk), and the next call left to NCCL records
		 * nothing. */
		set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_none_set);
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, (uintptr_t)c_set);
		memcpy(tbl, base, sizeof tbl);
		t_call(t, c, NCCLBPF_COLL_ALLGATHER, nb, 1, 0, tbl, &nch);
		chunk = 4096;
		t->v6->getChunkSize(c, NCCLBPF_COLL_ALLGATHER, nb, 1, 2, 1, &chunk);
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, 0);
		memcpy(tbl, base, sizeof tbl);
		t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
		int (*snap)(struct ncclbpf_comm_decisions *, int, int *) =
		    (int (*)(struct ncclbpf_comm_decisions *, int, int *))dlsym(t->lib, "ncclbpf_decisions_snapshot");
		static struct ncclbpf_comm_decisions recs[8];
		int live = 0, got = snap ? snap(recs, 8, &live) : -1;
		const struct ncclbpf_comm_decisions *me = NULL;
		for (int i = 0; i < got; i++)
			if (recs[i].comm_id == 42)
				me = &recs[i];
		CHECK(me != NULL && me->seq >= 2, "decisions snapshot: %d communicators, comm 42 %s", got, me ? "early" : "missing");
		if (me && me->seq >= 2) {
			const struct ncclbpf_decision *chunked = NULL, *last = NULL;
			for (uint32_t i = 0; i < me->n; i++) {
				if (me->ring[i].seq == me->seq - 2)
					chunked = &me->ring[i];
				if (me->ring[i].seq == me->seq - 1)
					last = &me->ring[i];
			}
			CHECK(chunked && chunked->coll == NCCLBPF_COLL_ALLGATHER && chunked->algorithm == -1 &&
			          chunked->protocol == -1 && chunked->channels == 0 && chunked->chunk == 8192,
			      "a chunk size for a collective left to NCCL: record %s (coll %d algo %d proto %d ch %d chunk %llu)",
			      chunked ? "wrong" : "missing", chunked ? chunked->coll : -9, chunked ? chunked->algorithm : -9,
			      chunked ? chunked->protocol : -9, chunked ? chunked->channels : -9,
			      chunked ? (unsigned long long)chunked->chunk : 0ull);
			CHECK(last == NULL, "a call left to NCCL without a chunk size was recorded");
		}
	}

	/* 4. finalize, then init again (NCCL may dlclose/reopen or just re-init) */
	t_fin(t, c);
	c = t_init(t, 43, 2, 1, 1, 2, 2);
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_bigch);
	memcpy(tbl, base, sizeof tbl);
	t_call(t, c, NCCLBPF_COLL_ALLREDUCE, nb, 1, 0, tbl, &nch);
	CHECK(tbl[1][2] == 0.0f, "after re-init: not applied");
	t_fin(t, c);
	set(NCCLBPF_SLOT_TUNER_HOST, 0);

	s1 = get_stats(t);
	CHECK(s1.comms_live == 0, "%" PRIu64 " communicators still registered", s1.comms_live);
	if (concurrent)
		CHECK(s1.calls >= (uint64_t)NT * 50000, "calls counted: %" PRIu64, s1.calls);
	printf("selftest v%d: %s (calls %" PRIu64 ", applied %" PRIu64 ", rejected %" PRIu64 ", warnings %d)\n", t->ver,
	       failures ? "FAILED" : "ok", s1.calls, s1.applied, s1.rejected, atomic_load(&n_warn));
	return failures ? 1 : 0;
}

/* ---- policy: a grid checked against the expected policy --------------------------------------- */

static const size_t grid_sizes[] = {0, 1, 1024, 65536, (1u << 20) - 1, 4u << 20, (4u << 20) + 1, 32u << 20,
                                    128u << 20, (128u << 20) + 1, 1u << 30, (size_t)1 << 34};
static const int grid_ranks[] = {1, 2, 4, 8, 9, 16};
static const int grid_nodes[] = {1, 2};
static const int grid_flags[] = {0, TBL_NVLS, TBL_NVLS | TBL_COLLNET, TBL_NO_RING_SIMPLE, TBL_NO_LL128};

static int policy_grid(struct tuner *t, const char *expect) {
	int is_sa = strcmp(expect, "size_aware") == 0;
	if (!is_sa && strcmp(expect, "noop") != 0) {
		FAIL("unknown expectation %s", expect);
		return 1;
	}
	long checked = 0, fired = 0;
	for (size_t r = 0; r < sizeof grid_ranks / sizeof *grid_ranks; r++)
		for (size_t nn = 0; nn < sizeof grid_nodes / sizeof *grid_nodes; nn++) {
			int ranks = grid_ranks[r], nodes = grid_nodes[nn];
			if (nodes > ranks)
				continue;
			int nvl = nodes; /* NCCL sets nNvlDomains = nNodes */
			void *c = t_init(t, 7000 + (uint64_t)ranks, ranks, nodes, nvl, ranks / nodes, ranks / nodes);
			for (int coll = 0; coll < 5; coll++)
				for (size_t s = 0; s < sizeof grid_sizes / sizeof *grid_sizes; s++)
					for (size_t f = 0; f < sizeof grid_flags / sizeof *grid_flags; f++) {
						float base[NA][NP], tbl[NA][NP], want[NA][NP];
						size_t nb = grid_sizes[s];
						model_table(base, coll, nb, ranks, nodes, grid_flags[f]);
						memcpy(want, base, sizeof want);
						int a, p;
						int v5 = t->ver >= 5;
						if (is_sa && sa_decide(coll, nb, (uint32_t)ranks, (uint32_t)nodes, v5 ? nvl : -1,
						                       (float *)base, &a, &p)) {
							want[a][p] = 0.0f;
							fired++;
						}
						if (t->ver == 2) {
							int algo = -1, proto = -1, nch = 0;
							t->v2->getCollInfo(c, coll, nb, grid_flags[f] & TBL_COLLNET ? 1 : 0,
							                   grid_flags[f] & TBL_NVLS ? 1 : 0, 1, &algo, &proto, &nch);
							/* v2 has no table: size_aware sees Ring/Simple as available */
							int wa = -1, wp = -1;
							float v2t[NA][NP] = {{0}};
							if (is_sa && sa_decide(coll, nb, (uint32_t)ranks, (uint32_t)nodes, -1,
							                       (float *)v2t, &wa, &wp)) {
							}
							CHECK(algo == wa && proto == wp && nch == 0,
							      "v2 coll %d size %zu ranks %d nodes %d: got %d/%d/%d want %d/%d", coll, nb,
							      ranks, nodes, algo, proto, nch, wa, wp);
						} else {
							int nch;
							memcpy(tbl, base, sizeof tbl);
							t_call(t, c, coll, nb, 1, 0, tbl, &nch);
							CHECK(tables_equal(tbl, want) && nch == 0,
							      "%s v%d coll %d size %zu ranks %d nodes %d flags %d: table differs", expect,
							      t->ver, coll, nb, ranks, nodes, grid_flags[f]);
						}
						checked++;
						if (failures > 20)
							return 1;
					}
			t_fin(t, c);
		}
	CHECK(!is_sa || fired > 0, "size_aware never fired on the grid");
	printf("policy %s v%d: %s (%ld calls, %ld decisions)\n", expect, t->ver, failures ? "FAILED" : "ok", checked,
	       fired);
	return failures ? 1 : 0;
}

/* ---- bench ------------------------------------------------------------------------------------- */

#define BENCH_CASES 64
#define BENCH_BATCH 4096
#define BENCH_REPS 201

static double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct bench_case {
	int coll;
	size_t n_bytes;
	float table[NA][NP];
};

/* size_aware as a native program behind the ncclbpf shim (isolates the shim's cost from the JIT's). */
PROG_FN p_sa_native(void *vctx) {
	struct ncclbpf_tuner_ctx *x = vctx;
	if (x->coll_type != NCCLBPF_COLL_ALLREDUCE || x->n_ranks < 2 || x->n_ranks > SA_MAX_RANKS || x->n_nodes != 1 ||
	    x->n_nvl_domains > 1 || x->n_bytes < SA_SIZE_LO || x->n_bytes > SA_SIZE_HI ||
	    !(x->avail_mask & (1u << NCCLBPF_CELL(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE))))
		return NCCLBPF_TUNER_DEFAULT;
	x->algorithm = NCCLBPF_ALGO_RING;
	x->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}
PROG_FN p_noop_native(void *vctx) { return NCCLBPF_TUNER_APPLY; }

struct init_args {
	struct tuner *t;
	void *c;
};
static void *init_thread(void *arg) {
	struct init_args *a = arg;
	a->c = t_init(a->t, 99, 8, 1, 1, 8, 8);
	return NULL;
}

/* Runs in a child: loads the configuration, returns the median ns per call. */
static double bench_one(const char *spec) {
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", spec);
	char *eq = strchr(buf, '=');
	char *lib = eq ? eq + 1 : buf;
	char *env = strchr(lib, ':');
	if (env) {
		*env++ = 0;
		for (char *save = NULL, *kv = strtok_r(env, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
			char *e = strchr(kv, '=');
			if (e) {
				*e = 0;
				setenv(kv, e + 1, 1);
			}
		}
	}
	struct tuner t;
	int none = strcmp(lib, "none") == 0;
	if (!none && open_tuner(&t, lib, 5) != 0)
		return -1;
	void *c = NULL;
	if (getenv("HOST_BENCH_OTHER_INIT")) { /* experiment: init another library first */
		struct tuner o;
		if (open_tuner(&o, getenv("HOST_BENCH_OTHER_INIT"), 5) == 0)
			t_init(&o, 1, 2, 1, 1, 2, 2);
	}
	if (!none && getenv("HOST_BENCH_INIT_THREAD")) { /* init (and the policy load) on another thread */
		struct init_args ia = {&t, NULL};
		pthread_t th;
		pthread_create(&th, NULL, init_thread, &ia);
		pthread_join(th, NULL);
		c = ia.c;
	} else if (!none) {
		c = t_init(&t, 99, 8, 1, 1, 8, 8);
	}
	const char *np = getenv("HOST_BENCH_NATIVE_PROGRAM"); /* "noop" or "size_aware": a C function in the slot */
	if (!none && np) {
		set_program_fn set = (set_program_fn)dlsym(t.lib, "ncclbpf_testing_set_program");
		if (set)
			/* "noop" skips the cost table and the mask, as libncclbpf.so publishes its noop; "size_aware"
			 * skips the table (it reads the mask) */
			set(0, strcmp(np, "noop") == 0 ? (uintptr_t)p_noop_native | 3 : (uintptr_t)p_sa_native | 1);
	}
	if (getenv("HOST_BENCH_SLEEP_MS")) /* let background threads of the library settle */
		usleep((useconds_t)atoi(getenv("HOST_BENCH_SLEEP_MS")) * 1000);
	/* a mix of collectives and sizes from 1 KiB to 1 GiB, AllReduce-heavy as in training */
	static struct bench_case cases[BENCH_CASES];
	for (int i = 0; i < BENCH_CASES; i++) {
		cases[i].coll = (i % 4 == 3) ? (i / 4) % 4 : NCCLBPF_COLL_ALLREDUCE;
		cases[i].n_bytes = (size_t)1024 << (i % 21);
		model_table(cases[i].table, cases[i].coll, cases[i].n_bytes, 8, 1, i % 2 ? TBL_NVLS : 0);
	}
#if defined(__x86_64__)
	if (getenv("HOST_BENCH_VZU"))
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
	double *med = calloc(BENCH_REPS, sizeof *med);
	volatile float sink = 0;
	for (int rep = -20; rep < BENCH_REPS; rep++) {
		double t0 = now_ns();
		for (int i = 0; i < BENCH_BATCH; i++) {
			struct bench_case *bc = &cases[i & (BENCH_CASES - 1)];
			float tbl[NA][NP];
			memcpy(tbl, bc->table, sizeof tbl);
			int nch = 0;
			if (!none)
				t.v5->getCollInfo(c, bc->coll, bc->n_bytes, 1, (float **)tbl, NA, NP, 0, &nch);
			__asm__ volatile("" : : "r"(tbl) : "memory");
			sink += tbl[1][2] + (float)nch;
		}
		double dt = now_ns() - t0;
		if (rep >= 0)
			med[rep] = dt / BENCH_BATCH;
	}
	qsort(med, BENCH_REPS, sizeof *med, cmp_double);
	double m = med[BENCH_REPS / 2];
	free(med);
	if (!none && getenv("HOST_VERBOSE") && dlsym(t.lib, "ncclbpf_tuner_get_stats")) {
		struct ncclbpf_tuner_stats_host st = get_stats(&t);
		fprintf(stderr, "%s: calls %llu policy_calls %llu applied %llu load %d\n", spec, (unsigned long long)st.calls,
		        (unsigned long long)st.policy_calls, (unsigned long long)st.applied, st.load_status);
	}
	if (!none)
		t_fin(&t, c);
	return m;
}

static double bench_child(const char *spec) {
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		double m = bench_one(spec);
		if (write(fd[1], &m, sizeof m) != sizeof m)
			_exit(2);
		_exit(failures ? 1 : 0);
	}
	close(fd[1]);
	double m = -1;
	if (read(fd[0], &m, sizeof m) != sizeof m)
		m = -1;
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		m = -1;
	return m;
}

/* Each configuration runs in its own child process (a policy is loaded once per process), in
 * BENCH_ROUNDS interleaved rounds; a configuration's result is its best round, which filters out
 * rounds disturbed by other load on the machine. */
#define BENCH_ROUNDS 5

static int bench(int n, char **specs) {
	double res[32];
	char names[32][64];
	if (n > 32)
		n = 32;
	for (int i = 0; i < n; i++) {
		const char *eq = strchr(specs[i], '=');
		snprintf(names[i], sizeof names[i], "%.*s", eq ? (int)(eq - specs[i]) : 63, specs[i]);
		res[i] = -1;
	}
	int rounds = getenv("HOST_BENCH_ROUNDS") ? atoi(getenv("HOST_BENCH_ROUNDS")) : BENCH_ROUNDS;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < n; i++) {
			double m = bench_child(specs[i]);
			if (m < 0) {
				res[i] = -2; /* failed once: failed */
				continue;
			}
			if (res[i] != -2 && (res[i] < 0 || m < res[i]))
				res[i] = m;
		}
	/* ratios against the first "native" and the "none" configurations, if present */
	double base = -1, native = -1;
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i], "none") == 0)
			base = res[i];
		if (strncmp(names[i], "native", 6) == 0 && native < 0)
			native = res[i];
	}
	printf("%-22s %12s %12s %10s %10s\n", "configuration", "ns/call", "net ns/call", "x native", "net x nat");
	for (int i = 0; i < n; i++) {
		if (res[i] < 0) {
			printf("%-22s FAILED\n", names[i]);
			continue;
		}
		double net = base >= 0 ? res[i] - base : res[i];
		double nnet = base >= 0 ? native - base : native;
		printf("%-22s %12.2f %12.2f", names[i], res[i], net);
		if (native > 0) {
			printf(" %10.2f", res[i] / native);
			if (nnet > 0.5) /* the net ratio means nothing when the native plugin costs ~nothing */
				printf(" %10.2f", net / nnet);
			else
				printf(" %10s", "-");
		}
		printf("\n");
	}
	printf("(per configuration: best of %d rounds of the median of %d batches of %d getCollInfo calls (v5), "
	       "8 ranks, 1 node, %d collective/size cases; net = minus the 'none' loop)\n",
	       rounds, BENCH_REPS, BENCH_BATCH, BENCH_CASES);
	for (int i = 0; i < n; i++)
		if (res[i] < 0)
			return 1;
	return 0;
}

/* ---- genrules ---------------------------------------------------------------------------------- */

/* N rules over the five collectives: per collective, consecutive size ranges from 0 up, the
 * algorithm/protocol cycling, a third of them constrained to 8 ranks, a fifth with channels. */
static int genrules(int n, const char *path) {
	static const char *colls[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
	static const char *algos[] = {"tree", "ring", "ring", "tree", "ring"};
	static const char *protos[] = {"ll", "ll128", "simple"};
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "# %d rules: collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n", n);
	int per = (n + 4) / 5;
	for (int i = 0; i < n; i++) {
		int c = 4 - i / per; /* AllReduce first */
		int k = i % per;
		/* ranges double from 1 KiB; the last one of each collective is open-ended */
		unsigned long long lo = k == 0 ? 0 : 1024ull << (k * 24 / per);
		unsigned long long hi = k == per - 1 ? 18446744073709551615ull : (1024ull << ((k + 1) * 24 / per)) - 1;
		if (hi < lo)
			hi = lo;
		const char *algo = c == 4 ? algos[k % 5] : "ring";
		fprintf(f, "%s,%llu,%llu,%s,%s,%d,-1,%d\n", colls[c], lo, hi, algo, protos[k % 3], k % 5 == 0 ? 4 : -1,
		        k % 3 == 0 ? 8 : -1);
	}
	fclose(f);
	return 0;
}

/* ---- fill: the context as one version of NCCL fills it ------------------------------------------ */

static struct ncclbpf_tuner_ctx fill_seen;
static struct ncclbpf_chunk_ctx fill_chunk_seen;
static int fill_runs, fill_chunk_runs;
PROG_FN p_fill(void *vctx) {
	fill_seen = *(const struct ncclbpf_tuner_ctx *)vctx;
	fill_runs++;
	return NCCLBPF_TUNER_DEFAULT;
}
PROG_FN c_fill(void *vctx) {
	fill_chunk_seen = *(const struct ncclbpf_chunk_ctx *)vctx;
	fill_chunk_runs++;
	return NCCLBPF_TUNER_DEFAULT;
}

#define FILL_CTX(P, X, F) printf("%s %s %lld\n", P, #F, (long long)(X).F)

/* fill makes one getCollInfo call (and, from v6, one getChunkSize call) as NCCL of tuner version ver
 * makes it, with inputs that differ from every default, and prints each argument it passed under the
 * name of the context field it stands for, then every field of the contexts the programs saw. Which
 * fields NCCL provides per version is internal/ncclabi/ctxfill's to say: the Go test compares.
 * Tuner v7 is v6 with a larger constants structure, which the shim does not read: called through v6's
 * table with a zeroed buffer of ample size. */
static int fill(const char *path, int ver) {
	struct tuner t = {0};
	if (open_tuner(&t, path, ver == 7 ? 6 : ver) != 0)
		return 1;
	if (ver == 7) {
		t.v6 = dlsym(t.lib, "ncclTunerPlugin_v7");
		CHECK(t.v6 != NULL, "no ncclTunerPlugin_v7");
		if (!t.v6)
			return 1;
	}
	set_program_fn set = (set_program_fn)dlsym(t.lib, "ncclbpf_testing_set_program");
	CHECK(set != NULL, "ncclbpf_testing_set_program not exported");
	if (!set)
		return 1;
	const uint64_t comm_id = 0x5eed0001;
	const int n_ranks = 6, n_nodes = 2, coll = NCCLBPF_COLL_ALLGATHER, pipe_ops = 2, reg_buff = 1;
	const size_t n_bytes = 12345;
	host_nvl_info_t nvl = {3, 1, 3};
	static double consts[1024]; /* v5/v6's 1152 bytes, v7's more */
	void *c = (void *)0x1;
	ncclResult_t rc = ncclInternalError;
	switch (ver) {
	case 7:
	case 6: rc = t.v6->init(&c, comm_id, n_ranks, n_nodes, host_logger, &nvl, (host_constants_t *)consts); break;
	case 5: rc = t.v5->init(&c, comm_id, n_ranks, n_nodes, host_logger, &nvl, (host_constants_t *)consts); break;
	case 4: rc = t.v4->init(n_ranks, n_nodes, host_logger, &c); break;
	case 3: rc = t.v3->init(n_ranks, n_nodes, host_logger, &c); break;
	case 2: rc = t.v2->init(n_ranks, n_nodes, host_logger, &c); break;
	}
	CHECK(rc == ncclSuccess && c != (void *)0x1 && c != NULL, "v%d init: %d", ver, rc);
	if (rc != ncclSuccess || c == NULL || c == (void *)0x1)
		return 1;
	printf("nccl n_ranks %d\nnccl n_nodes %d\n", n_ranks, n_nodes);
	if (ver >= 5)
		printf("nccl comm_id %lld\nnccl n_nvl_domains %d\nnccl min_ranks_per_nvl_domain %d\n"
		       "nccl max_ranks_per_nvl_domain %d\n",
		       (long long)comm_id, nvl.nNvlDomains, nvl.minRanksPerNvlDomain, nvl.maxRanksPerNvlDomain);

	float table[NA][NP];
	model_table(table, coll, n_bytes, n_ranks, n_nodes, TBL_NVLS);
	set(NCCLBPF_SLOT_TUNER_HOST, (uintptr_t)p_fill);
	int nch = 0, algo = -1, proto = -1;
	switch (ver) {
	case 7:
	case 6: rc = t.v6->getCollInfo(c, coll, n_bytes, pipe_ops, (float **)table, NA, NP, reg_buff, &nch); break;
	case 5: rc = t.v5->getCollInfo(c, coll, n_bytes, pipe_ops, (float **)table, NA, NP, reg_buff, &nch); break;
	case 4: rc = t.v4->getCollInfo(c, coll, n_bytes, pipe_ops, (float **)table, NA, NP, reg_buff, &nch); break;
	case 3: rc = t.v3->getCollInfo(c, coll, n_bytes, pipe_ops, (float **)table, NA, NP, &nch); break;
	case 2: rc = t.v2->getCollInfo(c, coll, n_bytes, 0, 1, pipe_ops, &algo, &proto, &nch); break;
	}
	set(NCCLBPF_SLOT_TUNER_HOST, 0);
	CHECK(rc == ncclSuccess && fill_runs == 1, "v%d getCollInfo: %d, %d program runs", ver, rc, fill_runs);
	printf("nccl n_bytes %zu\nnccl coll_type %d\nnccl num_pipe_ops %d\n", n_bytes, coll, pipe_ops);
	if (ver >= 4)
		printf("nccl reg_buff %d\n", reg_buff);
	if (ver >= 3)
		for (int i = 0; i < NCELLS; i++)
			printf("nccl cost[%d][%d] %lld\n", i / NP, i % NP, (long long)fbits(((float *)table)[i]));
	if (ver == 2)
		printf("v2 collnet_support 0\nv2 nvls_support 1\n");
	FILL_CTX("ctx", fill_seen, comm_id);
	FILL_CTX("ctx", fill_seen, call_seq);
	FILL_CTX("ctx", fill_seen, n_bytes);
	FILL_CTX("ctx", fill_seen, coll_type);
	FILL_CTX("ctx", fill_seen, num_pipe_ops);
	FILL_CTX("ctx", fill_seen, reg_buff);
	FILL_CTX("ctx", fill_seen, n_ranks);
	FILL_CTX("ctx", fill_seen, n_nodes);
	FILL_CTX("ctx", fill_seen, n_nvl_domains);
	FILL_CTX("ctx", fill_seen, min_ranks_per_nvl_domain);
	FILL_CTX("ctx", fill_seen, max_ranks_per_nvl_domain);
	FILL_CTX("ctx", fill_seen, abi_version);
	FILL_CTX("ctx", fill_seen, avail_mask);
	for (int i = 0; i < NCELLS; i++)
		printf("ctx cost[%d][%d] %lld\n", i / NP, i % NP, (long long)fill_seen.cost[i / NP][i % NP]);
	FILL_CTX("ctx", fill_seen, algorithm);
	FILL_CTX("ctx", fill_seen, protocol);
	FILL_CTX("ctx", fill_seen, n_channels);

	if (ver >= 6) {
		size_t chunk = 131072;
		const int c_algo = NCCLBPF_ALGO_RING, c_proto = NCCLBPF_PROTO_SIMPLE, c_nch = 3;
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, (uintptr_t)c_fill);
		rc = t.v6->getChunkSize(c, coll, 4096, c_algo, c_proto, c_nch, &chunk);
		set(NCCLBPF_SLOT_CHUNK_SIZE_HOST, 0);
		CHECK(rc == ncclSuccess && fill_chunk_runs == 1, "v%d getChunkSize: %d, %d program runs", ver, rc, fill_chunk_runs);
		printf("chunk-nccl comm_id %lld\nchunk-nccl n_ranks %d\nchunk-nccl n_nodes %d\n", (long long)comm_id, n_ranks,
		       n_nodes);
		printf("chunk-nccl n_bytes 4096\nchunk-nccl chunk_size 131072\nchunk-nccl coll_type %d\n", coll);
		printf("chunk-nccl algorithm %d\nchunk-nccl protocol %d\nchunk-nccl n_channels %d\n", c_algo, c_proto, c_nch);
		FILL_CTX("chunk", fill_chunk_seen, comm_id);
		FILL_CTX("chunk", fill_chunk_seen, call_seq);
		FILL_CTX("chunk", fill_chunk_seen, n_bytes);
		FILL_CTX("chunk", fill_chunk_seen, chunk_size);
		FILL_CTX("chunk", fill_chunk_seen, coll_type);
		FILL_CTX("chunk", fill_chunk_seen, algorithm);
		FILL_CTX("chunk", fill_chunk_seen, protocol);
		FILL_CTX("chunk", fill_chunk_seen, n_channels);
		FILL_CTX("chunk", fill_chunk_seen, n_ranks);
		FILL_CTX("chunk", fill_chunk_seen, n_nodes);
		FILL_CTX("chunk", fill_chunk_seen, new_chunk_size);
	}
	switch (ver) {
	case 7:
	case 6: rc = t.v6->finalize(c); break;
	case 5: rc = t.v5->finalize(c); break;
	case 4: rc = t.v4->destroy(c); break;
	case 3: rc = t.v3->destroy(c); break;
	case 2: rc = t.v2->destroy(c); break;
	}
	CHECK(rc == ncclSuccess, "v%d finalize: %d", ver, rc);
	return failures ? 1 : 0;
}

int main(int argc, char **argv) {
	if (argc >= 4 && strcmp(argv[1], "genrules") == 0)
		return genrules(atoi(argv[2]), argv[3]);
	if (argc >= 3 && strcmp(argv[1], "bench") == 0)
		return bench(argc - 2, argv + 2);
	if (argc >= 4 && strcmp(argv[1], "fill") == 0)
		return fill(argv[2], atoi(argv[3]));
	if (argc < 4) {
		fprintf(stderr, "usage: host run|selftest|fill LIB VER | host policy LIB VER EXPECT | host bench CONFIG... | "
		                "host genrules N FILE\n");
		return 2;
	}
	struct tuner t;
	if (open_tuner(&t, argv[2], atoi(argv[3])) != 0)
		return 1;
	if (strcmp(argv[1], "run") == 0)
		return run_script(&t);
	if (strcmp(argv[1], "selftest") == 0)
		return selftest(&t, argv[2]);
	if (strcmp(argv[1], "policy") == 0 && argc >= 5)
		return policy_grid(&t, argv[4]);
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}

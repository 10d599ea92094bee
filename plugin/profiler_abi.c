/* SPDX-License-Identifier: MIT */
/*
 * profiler_abi.c: NCCL's profiler ABI, v1 .. v7 (profiler_abi.h), on the shim's version-neutral core
 * (profiler_core.h): descriptor decoding (NCCL's names to the policy's numbers), one startEvent
 * adapter per descriptor layout, the record and init adapters, and the exported ncclProfiler_vN.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "profiler_core.h"

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

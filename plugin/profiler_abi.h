/* SPDX-License-Identifier: MIT */
/*
 * profiler_abi.h: NCCL's profiler plugin ABI, versions 1 to 7, as ncclbpf sees it.
 *
 * Written from docs/nccl-plugin-abi.md (the project's fact sheet, LP64 Linux); the sizes asserted at
 * the end are the ones measured there. Only what the shim and the test host use is named; union
 * members that ncclbpf never reads are kept so that every size is the real one.
 */
#ifndef NCCLBPF_PROFILER_ABI_H
#define NCCLBPF_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int nbp_result_t; /* ncclResult_t: 0 = ncclSuccess */
#define NBP_SUCCESS 0
#define NBP_INTERNAL_ERROR 3

typedef void (*nbp_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
#define NBP_LOG_WARN 2
#define NBP_LOG_INFO 3
#define NBP_SUBSYS_INIT 0x1
#define NBP_SUBSYS_PROFILE 0x4000

/* Event types (the activation-mask bits). */
enum {
	NBP_EV_GROUP = 1 << 0,
	NBP_EV_COLL = 1 << 1,
	NBP_EV_P2P = 1 << 2,
	NBP_EV_PROXY_OP = 1 << 3,
	NBP_EV_PROXY_STEP = 1 << 4,
	NBP_EV_PROXY_CTRL = 1 << 5,
	NBP_EV_KERNEL_CH = 1 << 6,
	NBP_EV_NET_PLUGIN = 1 << 7,
	NBP_EV_GROUP_API = 1 << 8,
	NBP_EV_COLL_API = 1 << 9,
	NBP_EV_P2P_API = 1 << 10,
	NBP_EV_KERNEL_LAUNCH = 1 << 11,
	NBP_EV_CE_COLL = 1 << 12,
	NBP_EV_CE_SYNC = 1 << 13,
	NBP_EV_CE_BATCH = 1 << 14,
	NBP_EV_KERNEL_PHASE = 1 << 15, /* v7: a kernel channel's barrier phases (symmetric kernels) */
};

/* ncclProfilerEventState_t (same numbers in every version). */
enum {
	NBP_ST_PROXY_OP_IN_PROGRESS = 19,
	NBP_ST_STEP_SEND_GPU_WAIT = 8,
	NBP_ST_STEP_SEND_WAIT = 9,
	NBP_ST_STEP_RECV_WAIT = 10,
	NBP_ST_STEP_RECV_FLUSH_WAIT = 11,
	NBP_ST_STEP_RECV_GPU_WAIT = 12,
	NBP_ST_STEP_SEND_PEER_WAIT = 20,
	NBP_ST_KERNEL_CH_STOP = 22,
	NBP_ST_GROUP_START_API_STOP = 23,
	NBP_ST_GROUP_END_API_START = 24,
	NBP_ST_KERNEL_PHASE_STOP = 31, /* v7: args.kernelCh.pTimer = the phase's GPU stop stamp */
};
typedef int nbp_state_t;

/* ---- v5 / v6 (v6 adds the CE members; both are 112 bytes) ---- */
typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct { bool graphCaptured; int groupDepth; } groupApi;
		struct { const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured; } collApi;
		struct { const char *func; size_t count; const char *datatype; void *stream; bool graphCaptured; } p2pApi;
		struct { void *stream; } kernelLaunch;
		struct {
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
			const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo; const char *proto; void *parentGroup;
		} coll;
		struct { const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; void *parentGroup; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
		struct {
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
			const char *datatype; const char *syncStrategy; bool intraBatchSync; uint32_t batchSize; uint32_t numBatches;
			uint32_t ceSeqNum; void *stream;
		} ceColl;
		struct { bool isComplete; int nRanks; } ceCollSync;
		struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
	};
} nbp_descr_v6_t;
typedef nbp_descr_v6_t nbp_descr_v5_t; /* v5 is the same minus the CE members: same offsets, same size */

typedef union {
	struct { size_t transSize; } proxyStep;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { void *data; } netPlugin;
	struct { uint64_t pTimer; } kernelCh;
} nbp_state_args_v6_t; /* = v5 = v4 */

/* ---- v7 (136 bytes): a per-call user tag on the API, task and CE events; the kernel variant and
 * whether a collective ran as a symmetric kernel; the kernel-phase event ---- */
typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct { bool graphCaptured; int groupDepth; } groupApi;
		struct { const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured; uint64_t userTag; } collApi;
		struct { const char *func; size_t count; const char *datatype; void *stream; bool graphCaptured; uint64_t userTag; } p2pApi;
		struct { void *stream; } kernelLaunch;
		struct {
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
			const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo; const char *proto; void *parentGroup;
			const char *kernelVariant; bool isSymColl; uint64_t userTag;
		} coll;
		struct { const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; void *parentGroup; uint64_t userTag; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
		struct {
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
			const char *datatype; const char *syncStrategy; bool intraBatchSync; uint32_t batchSize; uint32_t numBatches;
			uint32_t ceSeqNum; void *stream; uint64_t userTag;
		} ceColl;
		struct { bool isComplete; int nRanks; } ceCollSync;
		struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
		struct { uint8_t channelId; uint8_t phaseId; const char *phaseName; uint64_t pTimer; } kernelPhase;
	};
} nbp_descr_v7_t;
typedef nbp_state_args_v6_t nbp_state_args_v7_t;

/* ---- v4 (104 bytes) ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
			const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo; const char *proto;
		} coll;
		struct { const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
	};
} nbp_descr_v4_t;

/* ---- v3 (120 bytes) ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name; uint64_t commHash; uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
			size_t count; int root; const char *datatype; uint8_t nMaxChannels; uint8_t nWarps; const char *algo; const char *proto;
		} coll;
		struct { const char *name; uint64_t commHash; const char *func; void *buff; const char *datatype; size_t count; int peer; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
	};
} nbp_descr_v3_t;

/* State arguments of v1..v3 (16 bytes). transSize is at offset 0 as in v4+. */
typedef union {
	struct { size_t transSize; int steps; } proxyOp;
	struct { int appendedProxyOps; } proxyCtrl;
} nbp_state_args_v3_t;

/* ---- v2 (128 bytes) ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name; uint64_t commHash; uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
			size_t count; int root; const char *datatype; size_t trafficBytes; uint8_t nMaxChannels; uint8_t nWarps;
			const char *algo; const char *proto;
		} coll;
		struct { const char *name; uint64_t commHash; const char *func; void *buff; const char *datatype; size_t count; int peer; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
		struct { int step; } proxyStep;
	};
} nbp_descr_v2_t;

/* ---- v1 (120 bytes): enums are numeric ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name; uint64_t commHash; uint64_t seqNumber; uint8_t func; const void *sendBuff; void *recvBuff;
			size_t count; int root; uint8_t datatype; uint32_t op; size_t trafficBytes; uint8_t nMaxChannels; uint8_t nWarps;
			uint8_t algo; uint8_t proto; int isCollnet; int isNvls;
		} coll;
		struct { const char *name; uint64_t commHash; uint8_t func; void *buff; uint8_t datatype; size_t count; int peer; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
		struct { int step; } proxyStep;
	};
} nbp_descr_v1_t;

/* ---- the exported structs ---- */
#define NBP_COMMON_FUNCS(DESCR, ARGS)                                                   \
	nbp_result_t (*startEvent)(void *context, void **eHandle, DESCR *eDescr);         \
	nbp_result_t (*stopEvent)(void *eHandle);                                         \
	nbp_result_t (*recordEventState)(void *eHandle, nbp_state_t eState, ARGS *eStateArgs); \
	nbp_result_t (*finalize)(void *context);

typedef struct {
	const char *name;
	nbp_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
	                     int nranks, int rank, nbp_logger_t logfn);
	NBP_COMMON_FUNCS(nbp_descr_v6_t, nbp_state_args_v6_t)
} nbp_profiler_v6_t;
typedef nbp_profiler_v6_t nbp_profiler_v5_t;

typedef struct {
	const char *name;
	nbp_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
	                     int nranks, int rank, nbp_logger_t logfn);
	NBP_COMMON_FUNCS(nbp_descr_v7_t, nbp_state_args_v7_t)
} nbp_profiler_v7_t;

typedef struct {
	const char *name;
	nbp_result_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash, int nNodes,
	                     int nranks, int rank, nbp_logger_t logfn);
	NBP_COMMON_FUNCS(nbp_descr_v4_t, nbp_state_args_v6_t)
} nbp_profiler_v4_t;

typedef struct {
	const char *name;
	nbp_result_t (*init)(void **context, int *eActivationMask);
	NBP_COMMON_FUNCS(nbp_descr_v3_t, nbp_state_args_v3_t)
} nbp_profiler_v3_t;

typedef struct {
	const char *name;
	nbp_result_t (*init)(void **context, int *eActivationMask);
	NBP_COMMON_FUNCS(nbp_descr_v2_t, nbp_state_args_v3_t)
} nbp_profiler_v2_t;

typedef struct {
	const char *name;
	nbp_result_t (*init)(void **context, int *eActivationMask);
	NBP_COMMON_FUNCS(nbp_descr_v1_t, nbp_state_args_v3_t)
} nbp_profiler_v1_t;

/* Sizes and offsets from the fact sheet (LP64). */
_Static_assert(sizeof(nbp_descr_v6_t) == 112, "descr v6");
_Static_assert(offsetof(nbp_descr_v6_t, coll.parentGroup) == 104, "descr v6 coll.parentGroup");
_Static_assert(offsetof(nbp_descr_v6_t, coll.nChannels) == 80, "descr v6 coll.nChannels");
_Static_assert(offsetof(nbp_descr_v6_t, p2p.nChannels) == 60, "descr v6 p2p.nChannels");
_Static_assert(offsetof(nbp_descr_v6_t, kernelCh.pTimer) == 32, "descr v6 kernelCh.pTimer");
_Static_assert(offsetof(nbp_descr_v6_t, proxyOp.isSend) == 44, "descr v6 proxyOp.isSend");
_Static_assert(offsetof(nbp_descr_v6_t, ceColl.stream) == 104, "descr v6 ceColl.stream");
_Static_assert(sizeof(nbp_state_args_v6_t) == 8, "state args v6");
_Static_assert(sizeof(nbp_descr_v7_t) == 136, "descr v7");
_Static_assert(offsetof(nbp_descr_v7_t, coll.userTag) == 128, "descr v7 coll.userTag");
_Static_assert(offsetof(nbp_descr_v7_t, collApi.userTag) == 72, "descr v7 collApi.userTag");
_Static_assert(sizeof(nbp_descr_v4_t) == 104, "descr v4");
_Static_assert(offsetof(nbp_descr_v4_t, coll.proto) == 96, "descr v4 coll.proto");
_Static_assert(sizeof(nbp_descr_v3_t) == 120, "descr v3");
_Static_assert(offsetof(nbp_descr_v3_t, coll.nMaxChannels) == 96, "descr v3 nMaxChannels");
_Static_assert(sizeof(nbp_state_args_v3_t) == 16, "state args v3");
_Static_assert(sizeof(nbp_descr_v2_t) == 128, "descr v2");
_Static_assert(sizeof(nbp_descr_v1_t) == 120, "descr v1");
_Static_assert(offsetof(nbp_descr_v1_t, coll.nMaxChannels) == 104, "descr v1 nMaxChannels");
_Static_assert(sizeof(nbp_profiler_v6_t) == 48, "profiler v6");
_Static_assert(sizeof(nbp_profiler_v1_t) == 48, "profiler v1");

#endif /* NCCLBPF_PROFILER_ABI_H */

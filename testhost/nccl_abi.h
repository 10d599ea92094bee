/* SPDX-License-Identifier: MIT */
/*
 * nccl_abi.h: the tuner ABI as NCCL sees it, written from the fact sheet (nccl-plugin-abi.md §1),
 * for the test host and the native comparison plugin. Not NCCL's header.
 */
#ifndef TESTHOST_NCCL_ABI_H
#define TESTHOST_NCCL_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ncclSuccess = 0, ncclInternalError = 3, ncclInvalidArgument = 4 } ncclResult_t;
typedef void (*ncclDebugLogger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

typedef struct {
	int nNvlDomains, minRanksPerNvlDomain, maxRanksPerNvlDomain;
} host_nvl_info_t;

typedef struct {
	double baseLatencies[7][3];
	double hwLatencies[3][7][3];
	double llMaxBws[4][3];
	double perChMaxRingLL128Bws[4][3];
	double perChMaxTreeLL128Bws[4][3];
	double perChMaxTreeBws[4][3];
	double perChMaxNVLSTreeBws[4][3];
} host_constants_t; /* 1152 bytes */

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
	                     host_nvl_info_t *nvl, host_constants_t *constants);
	ncclResult_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
	                            int numAlgo, int numProto, int regBuff, int *nChannels);
	ncclResult_t (*finalize)(void *ctx);
	ncclResult_t (*getChunkSize)(void *ctx, int collType, size_t nBytes, int algo, int proto, int nChannels,
	                             size_t *chunkSize);
} host_tuner_v6_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
	                     host_nvl_info_t *nvl, host_constants_t *constants);
	ncclResult_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
	                            int numAlgo, int numProto, int regBuff, int *nChannels);
	ncclResult_t (*finalize)(void *ctx);
} host_tuner_v5_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void **ctx);
	ncclResult_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
	                            int numAlgo, int numProto, int regBuff, int *nChannels);
	ncclResult_t (*destroy)(void *ctx);
} host_tuner_v4_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void **ctx);
	ncclResult_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
	                            int numAlgo, int numProto, int *nChannels);
	ncclResult_t (*destroy)(void *ctx);
} host_tuner_v3_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void **ctx);
	ncclResult_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int collNetSupport, int nvlsSupport,
	                            int numPipeOps, int *algorithm, int *protocol, int *nChannels);
	ncclResult_t (*destroy)(void *ctx);
} host_tuner_v2_t;

#endif

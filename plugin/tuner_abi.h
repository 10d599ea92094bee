/* SPDX-License-Identifier: MIT */
/*
 * tuner_abi.h: NCCL's tuner plugin ABI, versions 2 to 7, as the shim (tuner.c) exports it.
 *
 * Written from the fact sheet (nccl-plugin-abi.md section 1; LP64). internal/ncclabi compares every
 * member of every struct here with NCCL's own headers, release by release. The shim never reads or
 * writes NCCL's model constants; they are described in full so that the comparison covers them.
 */
#ifndef NCCLBPF_TUNER_ABI_H
#define NCCLBPF_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef void (*nbt_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

/* ncclNvlDomainInfo_v5_t (= _v6_t = _v7_t) */
typedef struct {
	int nNvlDomains, minRanksPerNvlDomain, maxRanksPerNvlDomain;
} nb_nvl_info_t;

#define NBT_NUM_ALGORITHMS 7 /* NCCL_NUM_ALGORITHMS_V5 */
#define NBT_NUM_PROTOCOLS 3  /* NCCL_NUM_PROTOCOLS_V5 */
#define NBT_NUM_HW_LINKS 3   /* NCCL_NUM_HW_LINKS_V5 */
#define NBT_NUM_SCALES 3     /* NCCL_NUM_TUNING_SCALES_V5 */
#define NBT_NUM_COMPCAPS 4   /* NCCL_NUM_COMPCAPS_V5: Volta, Ampere, Hopper, Blackwell */
#define NBT_NUM_COMPCAPS_V7 5

/* ncclTunerConstants_v5_t (= _v6_t): 1152 bytes; v7 has one more compute capability per table. */
#define NBT_CONSTANTS(NCAPS)                                                \
	double baseLatencies[NBT_NUM_ALGORITHMS][NBT_NUM_PROTOCOLS];            \
	double hwLatencies[NBT_NUM_HW_LINKS][NBT_NUM_ALGORITHMS][NBT_NUM_PROTOCOLS]; \
	double llMaxBws[NCAPS][NBT_NUM_SCALES];                                 \
	double perChMaxRingLL128Bws[NCAPS][NBT_NUM_SCALES];                     \
	double perChMaxTreeLL128Bws[NCAPS][NBT_NUM_SCALES];                     \
	double perChMaxTreeBws[NCAPS][NBT_NUM_SCALES];                          \
	double perChMaxNVLSTreeBws[NCAPS][NBT_NUM_SCALES];
typedef struct nb_tuner_constants { NBT_CONSTANTS(NBT_NUM_COMPCAPS) } nb_tuner_constants_t;
typedef struct nb_tuner_constants_v7 { NBT_CONSTANTS(NBT_NUM_COMPCAPS_V7) } nb_tuner_constants_v7_t;
#undef NBT_CONSTANTS

#define NBT_V5_MEMBERS(CONSTANTS)                                                                     \
	const char *name;                                                                             \
	int (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, nbt_logger_t log,        \
	            nb_nvl_info_t *nvl, CONSTANTS *constants);                                        \
	int (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable, \
	                   int numAlgo, int numProto, int regBuff, int *nChannels);                   \
	int (*finalize)(void *ctx);
#define NBT_CHUNK_MEMBER                                                                             \
	int (*getChunkSize)(void *ctx, int collType, size_t nBytes, int algo, int proto, int nChannels, \
	                    size_t *chunkSize);

/* ncclTuner_v7_t: v6 with the larger constants */
typedef struct { NBT_V5_MEMBERS(nb_tuner_constants_v7_t) NBT_CHUNK_MEMBER } nb_tuner_v7_t;
/* ncclTuner_v6_t: v5 and getChunkSize (optional) */
typedef struct { NBT_V5_MEMBERS(nb_tuner_constants_t) NBT_CHUNK_MEMBER } nb_tuner_v6_t;
/* ncclTuner_v5_t: the context first in init, commId, NVLink domains and constants */
typedef struct { NBT_V5_MEMBERS(nb_tuner_constants_t) } nb_tuner_v5_t;
#undef NBT_V5_MEMBERS
#undef NBT_CHUNK_MEMBER

/* ncclTuner_v4_t: init(nRanks, nNodes, log, ctx), destroy */
typedef struct {
	const char *name;
	int (*init)(size_t nRanks, size_t nNodes, nbt_logger_t log, void **ctx);
	int (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
	                   int numAlgo, int numProto, int regBuff, int *nChannels);
	int (*destroy)(void *ctx);
} nb_tuner_v4_t;

/* ncclTuner_v3_t: v4 without regBuff */
typedef struct {
	const char *name;
	int (*init)(size_t nRanks, size_t nNodes, nbt_logger_t log, void **ctx);
	int (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
	                   int numAlgo, int numProto, int *nChannels);
	int (*destroy)(void *ctx);
} nb_tuner_v3_t;

/* ncclTuner_v2_t: no cost table; algorithm and protocol out */
typedef struct {
	const char *name;
	int (*init)(size_t nRanks, size_t nNodes, nbt_logger_t log, void **ctx);
	int (*getCollInfo)(void *ctx, int collType, size_t nBytes, int collNetSupport, int nvlsSupport,
	                   int numPipeOps, int *algorithm, int *protocol, int *nChannels);
	int (*destroy)(void *ctx);
} nb_tuner_v2_t;

_Static_assert(sizeof(nb_tuner_constants_t) == 1152, "ncclTunerConstants_v5_t");
_Static_assert(sizeof(nb_tuner_v6_t) == 40 && sizeof(nb_tuner_v7_t) == 40, "ncclTuner_v6_t, _v7_t");
_Static_assert(sizeof(nb_tuner_v5_t) == 32 && sizeof(nb_tuner_v2_t) == 32, "ncclTuner_v5_t, _v2_t");

#endif /* NCCLBPF_TUNER_ABI_H */

/* SPDX-License-Identifier: MIT */
/*
 * tuner_abi.c: the tuner's exported tables, ncclTunerPlugin_v2 to _v7 (the ABI: tuner_abi.h), and
 * their per-version entry points, which lead to the version-neutral ones of tuner.c (tuner.h).
 *
 * Written from the ABI fact sheet (docs: nccl-plugin-abi.md); no NCCL code or header is used. The
 * exported symbols are data objects, as NCCL expects. getCollInfo of v4..v7 is tuner.c's own entry
 * (no call added on the hot path); v3's passes regBuff -1 to it, v2's presents NCCL's answers as a
 * virtual cost table.
 */
#include <stddef.h>
#include <stdint.h>

#include "ncclbpf.h"
#include "tuner.h"

/* ---- init ------------------------------------------------------------------------------------ */

static int nb_init_v5(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, nb_logger_t log,
                      nb_nvl_info_t *nvl, nb_tuner_constants_t *constants) {
	(void)constants; /* NCCL's model constants are left alone */
	return nb_init(ctx, commId, nRanks, nNodes, log, nvl, 5);
}

static int nb_init_v6(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, nb_logger_t log,
                      nb_nvl_info_t *nvl, nb_tuner_constants_t *constants) {
	(void)constants;
	return nb_init(ctx, commId, nRanks, nNodes, log, nvl, 6);
}

/* v7: v6 with a fifth compute capability in the constants, which the shim never touches. */
static int nb_init_v7(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, nb_logger_t log,
                      nb_nvl_info_t *nvl, nb_tuner_constants_v7_t *constants) {
	(void)constants;
	return nb_init(ctx, commId, nRanks, nNodes, log, nvl, 7);
}

static int nb_init_v4(size_t nRanks, size_t nNodes, nb_logger_t log, void **ctx) {
	return nb_init(ctx, 0, nRanks, nNodes, log, NULL, 4);
}
static int nb_init_v3(size_t nRanks, size_t nNodes, nb_logger_t log, void **ctx) {
	return nb_init(ctx, 0, nRanks, nNodes, log, NULL, 3);
}
static int nb_init_v2(size_t nRanks, size_t nNodes, nb_logger_t log, void **ctx) {
	return nb_init(ctx, 0, nRanks, nNodes, log, NULL, 2);
}

/* ---- getCollInfo of v3 and v2 ------------------------------------------------------------------ */

static int nb_get_coll_info_v3(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
                               int numAlgo, int numProto, int *nChannels) {
	return nb_get_coll_info(ctx, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, -1, nChannels);
}

static int nb_get_coll_info_v2(void *ctx, int collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                               int numPipeOps, int *algorithm, int *protocol, int *nChannels) {
	struct nb_comm *c = ctx;
	if (c == NULL)
		return NB_SUCCESS;
	/* v2 has no cost table: present every cell as "available, cost unknown" (0.0) except what
	 * NCCL said is unsupported, and translate a full-cell choice back to algorithm/protocol. */
	float table[NCCLBPF_NUM_ALGORITHMS * NCCLBPF_NUM_PROTOCOLS];
	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++) {
		int off = (!collNetSupport && (a == NCCLBPF_ALGO_COLLNET_DIRECT || a == NCCLBPF_ALGO_COLLNET_CHAIN)) ||
		          (!nvlsSupport && (a == NCCLBPF_ALGO_NVLS || a == NCCLBPF_ALGO_NVLS_TREE));
		for (int p = 0; p < NCCLBPF_NUM_PROTOCOLS; p++)
			table[a * NCCLBPF_NUM_PROTOCOLS + p] = off ? -1.0f : 0.0f;
	}
	int chosen[2] = {-1, -1};
	nb_tune_any(c, collType, nBytes, numPipeOps, table, NCCLBPF_NUM_ALGORITHMS, NCCLBPF_NUM_PROTOCOLS, -1, nChannels,
	            1, chosen);
	if (chosen[0] >= 0 && algorithm && protocol) {
		*algorithm = chosen[0];
		*protocol = chosen[1];
	}
	return NB_SUCCESS;
}

/* ---- the exported symbols -------------------------------------------------------------------- */

#define NB_NAME "ncclbpf"

__attribute__((visibility("default"))) const nb_tuner_v7_t ncclTunerPlugin_v7 = {
    NB_NAME, nb_init_v7, nb_get_coll_info, nb_finalize, nb_get_chunk_size};
__attribute__((visibility("default"))) const nb_tuner_v6_t ncclTunerPlugin_v6 = {
    NB_NAME, nb_init_v6, nb_get_coll_info, nb_finalize, nb_get_chunk_size};
__attribute__((visibility("default"))) const nb_tuner_v5_t ncclTunerPlugin_v5 = {
    NB_NAME, nb_init_v5, nb_get_coll_info, nb_finalize};
__attribute__((visibility("default"))) const nb_tuner_v4_t ncclTunerPlugin_v4 = {
    NB_NAME, nb_init_v4, nb_get_coll_info, nb_finalize};
__attribute__((visibility("default"))) const nb_tuner_v3_t ncclTunerPlugin_v3 = {
    NB_NAME, nb_init_v3, nb_get_coll_info_v3, nb_finalize};
__attribute__((visibility("default"))) const nb_tuner_v2_t ncclTunerPlugin_v2 = {
    NB_NAME, nb_init_v2, nb_get_coll_info_v2, nb_finalize};

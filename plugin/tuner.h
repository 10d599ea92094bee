/* SPDX-License-Identifier: MIT */
/*
 * tuner.h: the tuner's version-neutral entry points (tuner.c), which the per-version entry points
 * and exported tables (tuner_abi.c) lead to. Private to the two files; nothing here is exported.
 */
#ifndef NCCLBPF_PLUGIN_TUNER_H
#define NCCLBPF_PLUGIN_TUNER_H

#include <stddef.h>
#include <stdint.h>
#include "internal.h"
#include "tuner_abi.h"

#define NB_SUCCESS 0 /* ncclSuccess */

/* nb_init makes a communicator's state; nvl may be NULL (before v5); abi is the caller's version. */
int nb_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes, nb_logger_t log, const nb_nvl_info_t *nvl,
            uint32_t abi) NB_HIDDEN;
int nb_finalize(void *ctx) NB_HIDDEN;
/* nb_get_coll_info is getCollInfo of v4..v7 itself (their tables point at it: no call of its own). */
int nb_get_coll_info(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable, int numAlgo,
                     int numProto, int regBuff, int *nChannels) NB_HIDDEN;
/* nb_tune_any runs a call whatever the table's shape (v2's virtual table, or an unexpected
 * numAlgo x numProto). v2: table is virtual, so a decision must name both algorithm and protocol;
 * chosen (may be NULL) gets the (algo, proto) cell made cheapest, or stays {-1,-1}. */
void nb_tune_any(struct nb_comm *c, int coll, size_t n_bytes, int pipe_ops, float *table, int numAlgo, int numProto,
                 int reg_buff, int *nChannels, int v2, int chosen[2]) NB_HIDDEN;
/* nb_get_chunk_size is getChunkSize of v6 and v7. */
int nb_get_chunk_size(void *ctx, int collType, size_t nBytes, int algo, int proto, int nChannels,
                      size_t *chunkSize) NB_HIDDEN;

#endif /* NCCLBPF_PLUGIN_TUNER_H */

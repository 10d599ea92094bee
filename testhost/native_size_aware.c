/* SPDX-License-Identifier: MIT */
/*
 * native_size_aware.c: the size_aware policy as a plain native tuner plugin (v5), the baseline that
 * ncclbpf's JIT-compiled size_aware is compared with. Built as build/libnative-size-aware.so:
 *   gcc -O2 -shared -fPIC -o libnative-size-aware.so native_size_aware.c
 */
#include <stdlib.h>
#include "nccl_abi.h"
#include "size_aware_native.h"

struct sa_comm {
	uint32_t n_ranks, n_nodes;
	int nvl_domains;
};

static ncclResult_t sa_init(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                            host_nvl_info_t *nvl, host_constants_t *constants) {
	struct sa_comm *c = calloc(1, sizeof *c);
	*ctx = c;
	if (c) {
		c->n_ranks = (uint32_t)nRanks;
		c->n_nodes = (uint32_t)nNodes;
		c->nvl_domains = nvl ? nvl->nNvlDomains : -1;
	}
	return ncclSuccess;
}

static ncclResult_t sa_get_coll_info(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
                                     int numAlgo, int numProto, int regBuff, int *nChannels) {
	struct sa_comm *c = ctx;
	float *t = (float *)collCostTable;
	int a, p;
	if (c && numAlgo == 7 && numProto == 3 &&
	    sa_decide(collType, nBytes, c->n_ranks, c->n_nodes, c->nvl_domains, t, &a, &p))
		t[a * 3 + p] = 0.0f;
	return ncclSuccess;
}

static ncclResult_t sa_finalize(void *ctx) {
	free(ctx);
	return ncclSuccess;
}

__attribute__((visibility("default"))) const host_tuner_v5_t ncclTunerPlugin_v5 = {
    "native_size_aware", sa_init, sa_get_coll_info, sa_finalize};

/* SPDX-License-Identifier: MIT */
/*
 * tuner_ab.c: a tuner plugin (v5) for the in-process comparison of scripts/gpu-tuner-cost.sh (AB=1).
 * It loads two tuner plugins, TUNER_AB_A and TUNER_AB_B (paths; each exports ncclTunerPlugin_v5),
 * initializes both on every communicator, and forwards each getCollInfo to the one chosen by the last
 * tuner_ab_select(k): 0 none (NCCL's own costs stand, as without a plugin), 1 A, 2 B.
 *
 * testhost/gpu/nccl_allreduce.c (NCCL_BENCH_AB) switches between blocks of groups, every rank at the
 * same group, so the ranks of a communicator always ask the same plugin and decide alike. Blocks of
 * the three configurations alternate within one process, a few milliseconds apart: the machine's
 * state, which moves whole processes by tens of percent, is the same for all three, and the ratios
 * of neighbouring blocks compare the plugins' getCollInfo alone. Both plugins serve the same ABI
 * version through the same forwarding (one load, one indirect call, in every configuration, "none"
 * included).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "../nccl_abi.h"

static int selected; /* 0 none, 1 A, 2 B */
static const host_tuner_v5_t *plugin[3];

__attribute__((visibility("default"))) void tuner_ab_select(int k) {
	__atomic_store_n(&selected, k >= 0 && k <= 2 ? k : 0, __ATOMIC_RELEASE);
}

struct ab_comm {
	void *ctx[3];
};

static const host_tuner_v5_t *load(const char *var, ncclDebugLogger_t log) {
	const char *path = getenv(var);
	if (!path || !*path) {
		if (log) log(1, ~0ul, __FILE__, __LINE__, "tuner_ab: %s is not set", var);
		return NULL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const host_tuner_v5_t *t = h ? dlsym(h, "ncclTunerPlugin_v5") : NULL;
	if (!t && log) log(1, ~0ul, __FILE__, __LINE__, "tuner_ab: %s=%s: %s", var, path, h ? "no ncclTunerPlugin_v5" : dlerror());
	return t;
}

static ncclResult_t ab_init(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                            host_nvl_info_t *nvl, host_constants_t *constants) {
	if (!plugin[1]) plugin[1] = load("TUNER_AB_A", log);
	if (!plugin[2]) plugin[2] = load("TUNER_AB_B", log);
	if (!plugin[1] || !plugin[2]) return ncclInternalError;
	struct ab_comm *c = calloc(1, sizeof *c);
	if (!c) return ncclInternalError;
	for (int k = 1; k <= 2; k++)
		if (plugin[k]->init(&c->ctx[k], commId, nRanks, nNodes, log, nvl, constants) != ncclSuccess) {
			if (k == 2) plugin[1]->finalize(c->ctx[1]);
			free(c);
			return ncclInternalError;
		}
	*ctx = c;
	return ncclSuccess;
}

static ncclResult_t ab_get_coll_info(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable,
                                     int numAlgo, int numProto, int regBuff, int *nChannels) {
	struct ab_comm *c = ctx;
	int k = __atomic_load_n(&selected, __ATOMIC_ACQUIRE);
	if (k == 0) return ncclSuccess;
	return plugin[k]->getCollInfo(c->ctx[k], collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, regBuff,
	                              nChannels);
}

static ncclResult_t ab_finalize(void *ctx) {
	struct ab_comm *c = ctx;
	ncclResult_t r = ncclSuccess;
	for (int k = 1; k <= 2; k++)
		if (plugin[k]->finalize(c->ctx[k]) != ncclSuccess) r = ncclInternalError;
	free(c);
	return r;
}

__attribute__((visibility("default"))) const host_tuner_v5_t ncclTunerPlugin_v5 = {"tuner_ab", ab_init,
                                                                                    ab_get_coll_info, ab_finalize};

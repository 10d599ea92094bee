/* SPDX-License-Identifier: MIT */
/*
 * size_aware_native.h: the size_aware policy's logic in plain C (policies/size_aware.bpf.c), used
 * by the native comparison plugin and by the host to check ncclbpf's decisions.
 */
#ifndef TESTHOST_SIZE_AWARE_NATIVE_H
#define TESTHOST_SIZE_AWARE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#define SA_SIZE_LO (4ull << 20)
#define SA_SIZE_HI (128ull << 20)
#define SA_MAX_RANKS 8

/* Returns 1 and the cell to make cheapest when size_aware fires. table is float[7][3]. */
static inline int sa_decide(int coll, uint64_t n_bytes, uint32_t n_ranks, uint32_t n_nodes, int nvl_domains,
                            const float *table, int *algo, int *proto) {
	if (coll != 4 /* AllReduce */)
		return 0;
	if (n_ranks < 2 || n_ranks > SA_MAX_RANKS)
		return 0;
	if (n_nodes != 1 || nvl_domains > 1)
		return 0;
	if (n_bytes < SA_SIZE_LO || n_bytes > SA_SIZE_HI)
		return 0;
	if (!(table[1 * 3 + 2] >= 0.0f)) /* Ring/Simple available */
		return 0;
	*algo = 1;
	*proto = 2;
	return 1;
}

#endif

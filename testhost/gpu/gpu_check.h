/* SPDX-License-Identifier: MIT */
/*
 * gpu_check.h: CUDA(x) and NCCL(x) for the GPU test programs (nccl_p2p.c, nccl_allreduce.c,
 * nccl_sweep.c): run x, and on an error print "PROG: file:line: x: the error" and exit with status 2.
 * Define GPU_CHECK_PROG (the program's name, a string) before including it, and GPU_CHECK_RANK (an
 * int expression) for "PROG: rank N: file:line: ..." in programs of several rank processes.
 */
#pragma once
#include <stdio.h>
#include <stdlib.h>

#ifdef GPU_CHECK_RANK
#define GPU_CHECK_FAIL(x, msg)                                                                         \
	fprintf(stderr, GPU_CHECK_PROG ": rank %d: %s:%d: %s: %s\n", (GPU_CHECK_RANK), __FILE__, __LINE__, #x, msg)
#else
#define GPU_CHECK_FAIL(x, msg) fprintf(stderr, GPU_CHECK_PROG ": %s:%d: %s: %s\n", __FILE__, __LINE__, #x, msg)
#endif

#define CUDA(x)                                                                                        \
	do {                                                                                           \
		cudaError_t e_ = (x);                                                                      \
		if (e_ != cudaSuccess) {                                                                   \
			GPU_CHECK_FAIL(x, cudaGetErrorString(e_));                                         \
			exit(2);                                                                               \
		}                                                                                          \
	} while (0)
#define NCCL(x)                                                                                        \
	do {                                                                                           \
		ncclResult_t r_ = (x);                                                                     \
		if (r_ != ncclSuccess) {                                                                   \
			GPU_CHECK_FAIL(x, ncclGetErrorString(r_));                                         \
			exit(2);                                                                               \
		}                                                                                          \
	} while (0)

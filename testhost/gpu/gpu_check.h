/* SPDX-License-Identifier: MIT */
/*
 * gpu_check.h: CUDA(x) and NCCL(x) for the GPU test programs (nccl_p2p.c, nccl_allreduce.c): run x, and
 * on an error print "PROG: file:line: x: the error" and exit with status 2. Define GPU_CHECK_PROG (the
 * program's name, a string) before including it.
 */
#pragma once
#include <stdio.h>
#include <stdlib.h>

#define CUDA(x)                                                                                        \
	do {                                                                                           \
		cudaError_t e_ = (x);                                                                      \
		if (e_ != cudaSuccess) {                                                                   \
			fprintf(stderr, GPU_CHECK_PROG ": %s:%d: %s: %s\n", __FILE__, __LINE__, #x,            \
			        cudaGetErrorString(e_));                                                   \
			exit(2);                                                                               \
		}                                                                                          \
	} while (0)
#define NCCL(x)                                                                                        \
	do {                                                                                           \
		ncclResult_t r_ = (x);                                                                     \
		if (r_ != ncclSuccess) {                                                                   \
			fprintf(stderr, GPU_CHECK_PROG ": %s:%d: %s: %s\n", __FILE__, __LINE__, #x,            \
			        ncclGetErrorString(r_));                                                   \
			exit(2);                                                                               \
		}                                                                                          \
	} while (0)

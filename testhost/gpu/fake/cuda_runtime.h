/* SPDX-License-Identifier: MIT */
/* cuda_runtime.h (fake): the few CUDA runtime declarations testhost/gpu/nccl_p2p.c, nccl_allreduce.c and nccl_sweep.c use, for the dry
 * run without a GPU (testhost/gpu/dry-run.sh). Written for this test; not NVIDIA's header. */
#pragma once
#include <stddef.h>
typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaMallocHost(void **, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMemcpy(void *, const void *, size_t, enum cudaMemcpyKind);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaMemGetInfo(size_t *, size_t *);
const char *cudaGetErrorString(cudaError_t);

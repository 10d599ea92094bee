/* SPDX-License-Identifier: MIT */
/*
 * nccl_allreduce.c: the tuner's cost on NCCL's launch path, for scripts/gpu-tuner-cost.sh. A test
 * program, compiled on the GPU machine against its NCCL (not part of the product):
 *
 *   gcc -O2 -I/usr/local/cuda/include -o nccl_allreduce nccl_allreduce.c -L/usr/local/cuda/lib64 -lnccl -lcudart
 *
 *   nccl_allreduce bench NGPUS ITERS BLOCKS BYTES
 *       one process, one communicator of NGPUS ranks (ncclCommInitAll, one GPU each); BLOCKS timed
 *       blocks of ITERS groups, each group one ncclAllReduce (float sum, BYTES) per rank and
 *       ncclGroupEnd. What is timed is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) from
 *       ncclGroupStart to the return of ncclGroupEnd: the enqueue path on which NCCL asks the tuner
 *       (getCollInfo, once per rank and collective), without the proxy threads and the kernels.
 *       The streams are synchronized every 16 groups, outside the timed part. Prints per block the
 *       CPU microseconds per all-reduce call (the group's time / NGPUS) and per group, their
 *       medians, and checks the last result (every rank's buffer holds the sum of the ranks' fills).
 *
 * NCCL runs a 1-rank all-reduce as a copy and never asks the tuner: NGPUS must be 2 or more to
 * measure anything. The last line is "NCCL_ALLREDUCE {json}"; exit status 0 when every call succeeded
 * and the sums were right.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA(x)                                                                                        \
	do {                                                                                           \
		cudaError_t e_ = (x);                                                                      \
		if (e_ != cudaSuccess) {                                                                   \
			fprintf(stderr, "nccl_allreduce: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(2);                                                                               \
		}                                                                                          \
	} while (0)
#define NCCL(x)                                                                                        \
	do {                                                                                           \
		ncclResult_t r_ = (x);                                                                     \
		if (r_ != ncclSuccess) {                                                                   \
			fprintf(stderr, "nccl_allreduce: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
			exit(2);                                                                               \
		}                                                                                          \
	} while (0)

#define MAXG 16
#define MAXB 64
#define SYNC_EVERY 16

static uint64_t cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
	double s[MAXB];
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_d);
	return s[(n - 1) / 2];
}

int main(int argc, char **argv) {
	if (argc != 6 || strcmp(argv[1], "bench") != 0) {
		fprintf(stderr, "usage: %s bench NGPUS ITERS BLOCKS BYTES\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[2]), iters = atoi(argv[3]), blocks = atoi(argv[4]);
	size_t bytes = (size_t)strtoull(argv[5], NULL, 0), count = bytes / sizeof(float);
	int avail = 0;
	CUDA(cudaGetDeviceCount(&avail));
	if (n < 2 || n > MAXG || n > avail || iters < 1 || blocks < 1 || blocks > MAXB || count == 0) {
		fprintf(stderr, "nccl_allreduce: need 2 <= NGPUS <= %d (this machine has %d GPUs), ITERS >= 1, "
		                "1 <= BLOCKS <= %d, BYTES >= 4\n", MAXG, avail, MAXB);
		return 2;
	}
	int devs[MAXG];
	ncclComm_t comms[MAXG];
	cudaStream_t streams[MAXG];
	float *sbuf[MAXG], *rbuf[MAXG];
	for (int i = 0; i < n; i++) devs[i] = i;
	NCCL(ncclCommInitAll(comms, n, devs));
	float *fill = malloc(bytes);
	if (!fill) return 2;
	for (int i = 0; i < n; i++) {
		CUDA(cudaSetDevice(i));
		CUDA(cudaStreamCreate(&streams[i]));
		CUDA(cudaMalloc((void **)&sbuf[i], bytes));
		CUDA(cudaMalloc((void **)&rbuf[i], bytes));
		for (size_t k = 0; k < count; k++) fill[k] = (float)(i + 1);
		CUDA(cudaMemcpy(sbuf[i], fill, bytes, cudaMemcpyHostToDevice));
	}
	double per_call[MAXB], per_group[MAXB];
	/* one untimed block first: connections, first-use allocations */
	for (int b = -1; b < blocks; b++) {
		uint64_t t = 0;
		for (int it = 0; it < iters; it++) {
			uint64_t t0 = cpu_ns();
			NCCL(ncclGroupStart());
			for (int i = 0; i < n; i++) NCCL(ncclAllReduce(sbuf[i], rbuf[i], count, ncclFloat, ncclSum, comms[i], streams[i]));
			NCCL(ncclGroupEnd());
			t += cpu_ns() - t0;
			if ((it + 1) % SYNC_EVERY == 0 || it + 1 == iters)
				for (int i = 0; i < n; i++) {
					CUDA(cudaSetDevice(i));
					CUDA(cudaStreamSynchronize(streams[i]));
				}
		}
		if (b >= 0) {
			per_group[b] = (double)t / 1e3 / iters;
			per_call[b] = per_group[b] / n;
		}
	}
	/* the sums: every rank holds 1 + 2 + ... + n */
	int ok = 1;
	float want = (float)n * (float)(n + 1) / 2.0f;
	for (int i = 0; i < n && ok; i++) {
		CUDA(cudaSetDevice(i));
		CUDA(cudaMemcpy(fill, rbuf[i], bytes, cudaMemcpyDeviceToHost));
		for (size_t k = 0; k < count; k++)
			if (fill[k] != want) {
				fprintf(stderr, "nccl_allreduce: rank %d element %zu is %g, want %g\n", i, k, fill[k], want);
				ok = 0;
				break;
			}
	}
	for (int i = 0; i < n; i++) {
		CUDA(cudaSetDevice(i));
		CUDA(cudaFree(sbuf[i]));
		CUDA(cudaFree(rbuf[i]));
		NCCL(ncclCommDestroy(comms[i]));
	}
	free(fill);
	int v = 0;
	ncclGetVersion(&v);
	printf("NCCL_ALLREDUCE {\"nccl_version\":%d,\"ngpus\":%d,\"bytes\":%zu,\"iters\":%d,\"ok\":%s,\"cpu_us_per_call\":[", v, n,
	       bytes, iters, ok ? "true" : "false");
	for (int b = 0; b < blocks; b++) printf("%s%.4f", b ? "," : "", per_call[b]);
	printf("],\"cpu_us_per_group\":[");
	for (int b = 0; b < blocks; b++) printf("%s%.4f", b ? "," : "", per_group[b]);
	printf("],\"median_cpu_us_per_call\":%.4f}\n", median(per_call, blocks));
	return ok ? 0 : 1;
}

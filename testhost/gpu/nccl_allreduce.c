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
 *   nccl_allreduce bench-procs NRANKS ITERS BLOCKS BYTES
 *       the same measure with one process per rank (fork; the ncclUniqueId passes through shared
 *       memory), rank i on GPU i modulo the GPUs there are. When ranks share a GPU, each sets
 *       NCCL_HOSTID=ncclbpf-rank<i> before its first NCCL call: NCCL then sees one node per rank (no
 *       "Duplicate GPU" refusal) and joins them through its network transport, so that one GPU is
 *       enough for a communicator of several ranks on which NCCL asks the tuner. Each group is one
 *       all-reduce; per block, the mean over the ranks of each rank's CPU microseconds per call.
 *
 * NCCL runs a 1-rank all-reduce as a copy and never asks the tuner: NGPUS (NRANKS) must be 2 or more
 * to measure anything. The last line is "NCCL_ALLREDUCE {json}"; exit status 0 when every call
 * succeeded and the sums were right.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GPU_CHECK_PROG "nccl_allreduce"
#include "gpu_check.h"

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

static void print_result(int n, size_t bytes, int iters, int blocks, int ok, const double *per_call,
                         const double *per_group, const char *mode) {
	int v = 0;
	ncclGetVersion(&v);
	printf("NCCL_ALLREDUCE {\"nccl_version\":%d,\"mode\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"iters\":%d,\"ok\":%s,"
	       "\"cpu_us_per_call\":[", v, mode, n, bytes, iters, ok ? "true" : "false");
	for (int b = 0; b < blocks; b++) printf("%s%.4f", b ? "," : "", per_call[b]);
	printf("],\"cpu_us_per_group\":[");
	for (int b = 0; b < blocks; b++) printf("%s%.4f", b ? "," : "", per_group[b]);
	printf("],\"median_cpu_us_per_call\":%.4f}\n", median(per_call, blocks));
}

/* What the rank processes of bench-procs share: the id (rank 0 posts it, then sets id_ready), each
 * rank's CPU microseconds per call per block, and each rank's verdict. */
struct shared {
	volatile int id_ready;
	ncclUniqueId id;
	double per_call[MAXG][MAXB];
	int ok[MAXG];
};

static int rank_main(struct shared *sh, int n, int rank, int iters, int blocks, size_t bytes) {
	size_t count = bytes / sizeof(float);
	int avail = 0;
	CUDA(cudaGetDeviceCount(&avail));
	if (avail < 1) {
		fprintf(stderr, "nccl_allreduce: rank %d: no GPU\n", rank);
		return 2;
	}
	if (n > avail) { /* ranks share a GPU: one NCCL node each */
		char host[32];
		snprintf(host, sizeof host, "ncclbpf-rank%d", rank);
		setenv("NCCL_HOSTID", host, 1);
	}
	CUDA(cudaSetDevice(rank % avail));
	if (rank == 0) {
		NCCL(ncclGetUniqueId(&sh->id));
		__atomic_store_n(&sh->id_ready, 1, __ATOMIC_RELEASE);
	} else {
		while (!__atomic_load_n(&sh->id_ready, __ATOMIC_ACQUIRE)) usleep(1000);
	}
	ncclComm_t comm;
	cudaStream_t stream;
	float *sbuf, *rbuf, *fill = malloc(bytes);
	if (!fill) return 2;
	NCCL(ncclCommInitRank(&comm, n, sh->id, rank));
	CUDA(cudaStreamCreate(&stream));
	CUDA(cudaMalloc((void **)&sbuf, bytes));
	CUDA(cudaMalloc((void **)&rbuf, bytes));
	for (size_t k = 0; k < count; k++) fill[k] = (float)(rank + 1);
	CUDA(cudaMemcpy(sbuf, fill, bytes, cudaMemcpyHostToDevice));
	for (int b = -1; b < blocks; b++) {
		uint64_t t = 0;
		for (int it = 0; it < iters; it++) {
			uint64_t t0 = cpu_ns();
			NCCL(ncclGroupStart());
			NCCL(ncclAllReduce(sbuf, rbuf, count, ncclFloat, ncclSum, comm, stream));
			NCCL(ncclGroupEnd());
			t += cpu_ns() - t0;
			if ((it + 1) % SYNC_EVERY == 0 || it + 1 == iters) CUDA(cudaStreamSynchronize(stream));
		}
		if (b >= 0) sh->per_call[rank][b] = (double)t / 1e3 / iters;
	}
	int ok = 1;
	float want = (float)n * (float)(n + 1) / 2.0f;
	CUDA(cudaMemcpy(fill, rbuf, bytes, cudaMemcpyDeviceToHost));
	for (size_t k = 0; k < count; k++)
		if (fill[k] != want) {
			fprintf(stderr, "nccl_allreduce: rank %d element %zu is %g, want %g\n", rank, k, fill[k], want);
			ok = 0;
			break;
		}
	sh->ok[rank] = ok;
	CUDA(cudaFree(sbuf));
	CUDA(cudaFree(rbuf));
	NCCL(ncclCommDestroy(comm));
	free(fill);
	return ok ? 0 : 1;
}

/* bench-procs: no CUDA or NCCL call in the parent before the fork (a child must start CUDA afresh). */
static int bench_procs(int n, int iters, int blocks, size_t bytes) {
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) return 2;
	memset(sh, 0, sizeof *sh);
	pid_t pids[MAXG];
	for (int r = 0; r < n; r++) {
		fflush(stdout);
		pids[r] = fork();
		if (pids[r] < 0) return 2;
		if (pids[r] == 0) _exit(rank_main(sh, n, r, iters, blocks, bytes));
	}
	int ok = 1;
	for (int r = 0; r < n; r++) {
		int st = 0;
		if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "nccl_allreduce: rank %d failed (status 0x%x)\n", r, st);
			ok = 0;
		}
	}
	if (!ok) return 1;
	double per_call[MAXB], per_group[MAXB];
	for (int b = 0; b < blocks; b++) {
		double s = 0;
		for (int r = 0; r < n; r++) s += sh->per_call[r][b];
		per_call[b] = per_group[b] = s / n;
	}
	for (int r = 0; r < n; r++) ok &= sh->ok[r];
	print_result(n, bytes, iters, blocks, ok, per_call, per_group, "procs");
	return ok ? 0 : 1;
}

int main(int argc, char **argv) {
	int procs = argc == 6 && strcmp(argv[1], "bench-procs") == 0;
	if (argc != 6 || (!procs && strcmp(argv[1], "bench") != 0)) {
		fprintf(stderr, "usage: %s bench NGPUS ITERS BLOCKS BYTES\n       %s bench-procs NRANKS ITERS BLOCKS BYTES\n",
		        argv[0], argv[0]);
		return 2;
	}
	int n = atoi(argv[2]), iters = atoi(argv[3]), blocks = atoi(argv[4]);
	size_t bytes = (size_t)strtoull(argv[5], NULL, 0), count = bytes / sizeof(float);
	if (procs) {
		if (n < 2 || n > MAXG || iters < 1 || blocks < 1 || blocks > MAXB || count == 0) {
			fprintf(stderr, "nccl_allreduce: need 2 <= NRANKS <= %d, ITERS >= 1, 1 <= BLOCKS <= %d, BYTES >= 4\n", MAXG,
			        MAXB);
			return 2;
		}
		return bench_procs(n, iters, blocks, bytes);
	}
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
	print_result(n, bytes, iters, blocks, ok, per_call, per_group, "threads");
	return ok ? 0 : 1;
}

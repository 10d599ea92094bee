/* SPDX-License-Identifier: MIT */
/*
 * nccl_sweep.c: one call of each collective at every size, for scripts/gpu-cost-capture.sh (the
 * capture of NCCL's cost tables that internal/ncclabi's TestCaptures checks the model against).
 * A test program, compiled on the GPU machine against its NCCL (scripts/build.sh nccl-sweep):
 *
 *   nccl_sweep NRANKS GO_FILE [MAX_BYTES]
 *       forks NRANKS processes, rank i sets NCCL_HOSTID=host<i> before any NCCL call (so that
 *       ranks sharing one GPU are ranks of different "nodes": NCCL then connects them with its
 *       Socket transport, and asks the tuner, which it does only for 2 ranks or more), takes GPU
 *       i % (GPUs), and joins one communicator whose ncclUniqueId rank 0 shares through memory
 *       mapped before the fork. Each rank then runs one AllReduce, AllGather, ReduceScatter,
 *       Broadcast and Reduce (float, sum, root 0) for every size 8 B, 16 B, ... up to MAX_BYTES
 *       (1 GiB), as NCCL counts bytes (AllGather and ReduceScatter: the whole buffer), skipping
 *       the sizes whose buffers do not fit the GPU's free memory, and synchronizes its stream.
 *       Then rank 0 prints "NCCL_SWEEP ready pid=PID" (PID: rank 0's process, whose policy maps
 *       a script dumps through the control socket) and every rank waits until GO_FILE exists (at
 *       most 600 s) before ncclCommDestroy.
 *
 * Exit status 0 when every rank ran every call; the last line is "NCCL_SWEEP done ...".
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int rank = -1;

#define GPU_CHECK_PROG "nccl_sweep"
#define GPU_CHECK_RANK rank
#include "gpu_check.h"

#define MAXRANKS 64

struct shared {
	volatile int id_ready;
	ncclUniqueId id;
};

static void sleep_ms(int ms) {
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int run_rank(int nranks, struct shared *sh, const char *go_file, size_t max_bytes) {
	char host[32];
	snprintf(host, sizeof host, "host%d", rank);
	setenv("NCCL_HOSTID", host, 1); /* before any NCCL call: its own "node" */
	int ngpus = 0;
	CUDA(cudaGetDeviceCount(&ngpus));
	if (ngpus < 1) {
		fprintf(stderr, "nccl_sweep: rank %d: no GPU\n", rank);
		return 2;
	}
	CUDA(cudaSetDevice(rank % ngpus));
	if (rank == 0) {
		NCCL(ncclGetUniqueId(&sh->id));
		__sync_synchronize();
		sh->id_ready = 1;
	} else {
		for (int i = 0; !sh->id_ready; i++) {
			if (i > 60000) {
				fprintf(stderr, "nccl_sweep: rank %d: no unique id from rank 0 in 60 s\n", rank);
				return 2;
			}
			sleep_ms(1);
		}
		__sync_synchronize();
	}
	ncclComm_t comm;
	NCCL(ncclCommInitRank(&comm, nranks, sh->id, rank));
	cudaStream_t st;
	CUDA(cudaStreamCreate(&st));
	size_t freeb = 0, total = 0;
	CUDA(cudaMemGetInfo(&freeb, &total));
	/* Every rank of the GPU holds two buffers of the largest size; keep a quarter free. */
	int per_gpu = (nranks + ngpus - 1) / ngpus;
	size_t fit = freeb / 4 * 3 / (2 * (size_t)per_gpu);
	size_t top = max_bytes < fit ? max_bytes : fit;
	void *a = NULL, *b = NULL;
	CUDA(cudaMalloc(&a, top));
	CUDA(cudaMalloc(&b, top));
	CUDA(cudaMemsetAsync(a, 0, top, st));
	CUDA(cudaMemsetAsync(b, 0, top, st));
	int calls = 0, skipped = 0;
	for (size_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
		if (bytes > top) {
			skipped++;
			continue;
		}
		size_t count = bytes / sizeof(float);              /* AllReduce, Broadcast, Reduce */
		size_t part = bytes / (sizeof(float) * (size_t)nranks); /* AllGather, ReduceScatter: per rank */
		NCCL(ncclAllReduce(a, b, count, ncclFloat, ncclSum, comm, st));
		calls++;
		if (part > 0) {
			NCCL(ncclAllGather(a, b, part, ncclFloat, comm, st));
			NCCL(ncclReduceScatter(a, b, part, ncclFloat, ncclSum, comm, st));
			calls += 2;
		}
		NCCL(ncclBroadcast(a, b, count, ncclFloat, 0, comm, st));
		NCCL(ncclReduce(a, b, count, ncclFloat, ncclSum, 0, comm, st));
		calls += 2;
		CUDA(cudaStreamSynchronize(st));
	}
	if (rank == 0) {
		printf("NCCL_SWEEP ready pid=%d calls=%d skipped_sizes=%d top_bytes=%zu\n", (int)getpid(), calls,
		       skipped, top);
		fflush(stdout);
	}
	struct stat s;
	for (int i = 0; stat(go_file, &s) != 0; i++) {
		if (i > 600000 / 50) {
			fprintf(stderr, "nccl_sweep: rank %d: %s did not appear in 600 s\n", rank, go_file);
			return 2;
		}
		sleep_ms(50);
	}
	NCCL(ncclCommDestroy(comm));
	CUDA(cudaFree(a));
	CUDA(cudaFree(b));
	if (rank == 0)
		printf("NCCL_SWEEP done ranks=%d calls_per_rank=%d\n", nranks, calls);
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: nccl_sweep NRANKS GO_FILE [MAX_BYTES]\n");
		return 2;
	}
	int nranks = atoi(argv[1]);
	size_t max_bytes = argc > 3 ? strtoull(argv[3], NULL, 0) : (size_t)1 << 30;
	if (nranks < 2 || nranks > MAXRANKS || max_bytes < 8) {
		fprintf(stderr, "nccl_sweep: NRANKS must be 2..%d (NCCL asks the tuner only for 2 ranks or more), MAX_BYTES >= 8\n",
			MAXRANKS);
		return 2;
	}
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("nccl_sweep: mmap");
		return 2;
	}
	memset(sh, 0, sizeof *sh);
	fflush(stdout);
	pid_t pids[MAXRANKS];
	for (int i = 0; i < nranks; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("nccl_sweep: fork");
			return 2;
		}
		if (pids[i] == 0) {
			rank = i;
			int rc = run_rank(nranks, sh, argv[2], max_bytes);
			fflush(stdout);
			_exit(rc);
		}
	}
	int failed = 0;
	for (int i = 0; i < nranks; i++) {
		int status = 0;
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "nccl_sweep: rank %d failed (status %#x)\n", i, status);
			failed = 1;
		}
	}
	return failed;
}

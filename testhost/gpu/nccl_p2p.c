/* SPDX-License-Identifier: MIT */
/*
 * nccl_p2p.c: NCCL's C API on one GPU, send/recv to self, for scripts/gpu-check.sh. A test program,
 * compiled on the GPU machine against its NCCL (not part of the product):
 *
 *   gcc -O2 -I/usr/local/cuda/include -o nccl_p2p nccl_p2p.c -L/usr/local/cuda/lib64 -lnccl -lcudart
 *
 *   nccl_p2p check N BYTES       two 1-rank communicators (two tuner/profiler init and finalize),
 *                                N groups of (ncclSend + ncclRecv to self) on each, every group with
 *                                its own fill value; every received buffer is copied to its own
 *                                slot of pinned host memory and checked byte by byte at the end
 *   nccl_p2p bench ITERS BLOCKS BYTES SYNC
 *                                BLOCKS timed blocks of ITERS groups on one communicator (SYNC 1: a
 *                                stream synchronize after every group, 0: one per block, 2: both,
 *                                pipelined first); prints microseconds per group of each block and
 *                                their median, one line per mode
 *
 * bench pins the calling thread after communicator init when NCCL_BENCH_CPUS is set (bench_cpu.h) and,
 * where the machine counts instructions, runs BLOCKS more pipelined blocks with each group between a
 * start and a stop of the thread's user-space instruction and cycle counters: "instructions_per_group"
 * and "cycles_per_group" (medians) in the pipelined mode's line.
 *
 * With NCCL_BENCH_SWITCH_0 and NCCL_BENCH_SWITCH_1 (shell commands, e.g. `ncclbpf reload
 * $NCCL_BENCH_PID OBJ`), bench compares two configurations in one process instead: BLOCKS sets of
 * two pipelined blocks, each block after its configuration's command (bench_switch).
 *
 * PyTorch hides which communicators exist and when they are destroyed; here ncclCommFinalize and
 * ncclCommDestroy are explicit. The last line is "NCCL_P2P {json}"; exit status 0 when every
 * buffer was right and every call succeeded.
 */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GPU_CHECK_PROG "nccl_p2p"
#include "bench_cpu.h"
#include "gpu_check.h"

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static ncclComm_t comm_new(void) {
	ncclUniqueId id;
	ncclComm_t c;
	NCCL(ncclGetUniqueId(&id));
	NCCL(ncclCommInitRank(&c, 1, id, 0));
	return c;
}

static void comm_end(ncclComm_t c) {
	NCCL(ncclCommFinalize(c));
	NCCL(ncclCommDestroy(c));
}

static void group(ncclComm_t c, void *send, void *recv, size_t bytes, cudaStream_t s) {
	NCCL(ncclGroupStart());
	NCCL(ncclSend(send, bytes, ncclInt8, 0, c, s));
	NCCL(ncclRecv(recv, bytes, ncclInt8, 0, c, s));
	NCCL(ncclGroupEnd());
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int run_check(int n, size_t bytes) {
	cudaStream_t s;
	CUDA(cudaStreamCreate(&s));
	void *send, *recv;
	unsigned char *host;
	CUDA(cudaMalloc(&send, bytes));
	CUDA(cudaMalloc(&recv, bytes));
	CUDA(cudaMallocHost((void **)&host, 2 * (size_t)n * bytes));
	memset(host, 0, 2 * (size_t)n * bytes);
	ncclComm_t comm[2] = {comm_new(), comm_new()};
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < n; i++) {
			int v = 1 + (k * n + i) % 251;
			CUDA(cudaMemsetAsync(send, v, bytes, s));
			CUDA(cudaMemsetAsync(recv, 0, bytes, s));
			group(comm[k], send, recv, bytes, s);
			CUDA(cudaMemcpyAsync(host + ((size_t)k * n + i) * bytes, recv, bytes, cudaMemcpyDeviceToHost, s));
		}
	CUDA(cudaStreamSynchronize(s));
	long bad_groups = 0;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < n; i++) {
			unsigned char v = (unsigned char)(1 + (k * n + i) % 251);
			const unsigned char *p = host + ((size_t)k * n + i) * bytes;
			for (size_t j = 0; j < bytes; j++)
				if (p[j] != v) {
					bad_groups++;
					break;
				}
		}
	comm_end(comm[0]);
	comm_end(comm[1]);
	int version = 0;
	ncclGetVersion(&version);
	printf("NCCL_P2P {\"mode\":\"check\",\"nccl\":%d,\"comms\":2,\"groups_per_comm\":%d,\"sends\":%d,\"recvs\":%d,"
	       "\"bytes\":%zu,\"bad_groups\":%ld,\"ok\":%s}\n",
	       version, n, 2 * n, 2 * n, bytes, bad_groups, bad_groups ? "false" : "true");
	CUDA(cudaFreeHost(host));
	CUDA(cudaFree(send));
	CUDA(cudaFree(recv));
	return bad_groups ? 1 : 0;
}

static double median_of(double *v, int n) {
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* count_blocks: BLOCKS pipelined blocks, each group inside the counters' window; the medians over
 * blocks of instructions and cycles per group. */
static void count_blocks(ncclComm_t c, void *send, void *recv, const struct bench_pmu *pmu, int iters, int blocks,
                         size_t bytes, cudaStream_t s, double *ins, double *cyc) {
	double *vi = calloc((size_t)blocks, sizeof *vi), *vc = calloc((size_t)blocks, sizeof *vc);
	if (!vi || !vc) {
		fprintf(stderr, "nccl_p2p: out of memory\n");
		exit(2);
	}
	for (int b = 0; b < blocks; b++) {
		uint64_t ni = 0, nc = 0;
		CUDA(cudaStreamSynchronize(s));
		bench_pmu_take(pmu, &ni, &nc);
		for (int i = 0; i < iters; i++) {
			bench_pmu_on(pmu);
			group(c, send, recv, bytes, s);
			bench_pmu_off(pmu);
		}
		if (bench_pmu_take(pmu, &ni, &nc) != 0) ni = nc = 0;
		vi[b] = (double)ni / iters;
		vc[b] = (double)nc / iters;
	}
	CUDA(cudaStreamSynchronize(s));
	*ins = median_of(vi, blocks);
	*cyc = median_of(vc, blocks);
	free(vi);
	free(vc);
}

/* One timed mode of run_bench: prints its line, returns 1 when the received bytes were right. */
static int bench_mode(ncclComm_t c, void *send, void *recv, unsigned char *host, double *per, int iters, int blocks,
                      size_t bytes, int sync, cudaStream_t s, const struct bench_pmu *pmu, int cpu) {
	int ok = 1;
	for (int b = 0; b < blocks; b++) {
		CUDA(cudaMemsetAsync(recv, 0, bytes, s));
		CUDA(cudaStreamSynchronize(s));
		double t0 = now_us();
		for (int i = 0; i < iters; i++) {
			group(c, send, recv, bytes, s);
			if (sync) CUDA(cudaStreamSynchronize(s));
		}
		CUDA(cudaStreamSynchronize(s));
		per[b] = (now_us() - t0) / iters;
		CUDA(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost));
		for (size_t j = 0; j < bytes; j++)
			if (host[j] != 0x5a) {
				ok = 0;
				break;
			}
	}
	double ins = 0, cyc = 0;
	if (pmu && !sync) count_blocks(c, send, recv, pmu, iters, blocks, bytes, s, &ins, &cyc);
	printf("NCCL_P2P {\"mode\":\"bench\",\"iters\":%d,\"blocks\":%d,\"bytes\":%zu,\"sync\":%d,\"cpu\":%d,\"us_per_group\":[",
	       iters, blocks, bytes, sync, cpu);
	for (int b = 0; b < blocks; b++) printf("%s%.3f", b ? "," : "", per[b]);
	double med = median_of(per, blocks);
	printf("],\"median_us\":%.3f", med);
	if (pmu && !sync) printf(",\"instructions_per_group\":%.2f,\"cycles_per_group\":%.2f", ins, cyc);
	printf(",\"ok\":%s}\n", ok ? "true" : "false");
	return ok;
}

/* switch_to: run NCCL_BENCH_SWITCH_<k> (a shell command; NCCL_BENCH_PID is this process), exit on failure. */
static void switch_to(int k) {
	char var[32];
	snprintf(var, sizeof var, "NCCL_BENCH_SWITCH_%d", k);
	const char *cmd = getenv(var);
	int st = cmd ? system(cmd) : -1;
	if (st != 0) {
		fprintf(stderr, "nccl_p2p: %s (%s) failed with status %d\n", var, cmd ? cmd : "unset", st);
		exit(2);
	}
}

/* bench_switch: the in-process comparison (NCCL_BENCH_SWITCH_0 and _1 set, pipelined): BLOCKS sets of
 * two blocks, one under each configuration, the order alternating from set to set. Before every
 * block its configuration's command runs (a policy reload of this process, even when the
 * configuration stays) and 200 untimed groups follow, so every timed block starts alike. Prints
 * each configuration's µs per group and the median over sets of the ratio 1/0; with pmu, as many
 * sets again with the counters on, and the same for instructions and cycles per group. */
static int bench_switch(ncclComm_t c, void *send, void *recv, unsigned char *host, int iters, int blocks, size_t bytes,
                        cudaStream_t s, const struct bench_pmu *pmu, int cpu) {
	double *v = calloc((size_t)blocks * 8, sizeof *v);
	if (!v) {
		fprintf(stderr, "nccl_p2p: out of memory\n");
		return 0;
	}
	double *us[2] = {v, v + blocks}, *ins[2] = {v + 2 * blocks, v + 3 * blocks}, *cyc[2] = {v + 4 * blocks, v + 5 * blocks};
	double *r = v + 6 * blocks;
	char pid[24];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	setenv("NCCL_BENCH_PID", pid, 1);
	int ok = 1;
	for (int pass = 0; pass < (pmu ? 2 : 1); pass++)
		for (int b = 0; b < 2 * blocks; b++) {
			int set = b / 2, k = (b % 2) ^ (set % 2);
			fflush(stdout);
			switch_to(k);
			for (int i = 0; i < 200; i++) group(c, send, recv, bytes, s);
			CUDA(cudaMemsetAsync(recv, 0, bytes, s));
			CUDA(cudaStreamSynchronize(s));
			if (pass == 0) {
				double t0 = now_us();
				for (int i = 0; i < iters; i++) group(c, send, recv, bytes, s);
				CUDA(cudaStreamSynchronize(s));
				us[k][set] = (now_us() - t0) / iters;
			} else {
				uint64_t ni = 0, nc = 0;
				bench_pmu_take(pmu, &ni, &nc);
				for (int i = 0; i < iters; i++) {
					bench_pmu_on(pmu);
					group(c, send, recv, bytes, s);
					bench_pmu_off(pmu);
				}
				CUDA(cudaStreamSynchronize(s));
				if (bench_pmu_take(pmu, &ni, &nc) != 0) ni = nc = 0;
				ins[k][set] = (double)ni / iters;
				cyc[k][set] = (double)nc / iters;
			}
			CUDA(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost));
			for (size_t j = 0; j < bytes; j++)
				if (host[j] != 0x5a) {
					ok = 0;
					break;
				}
		}
	printf("NCCL_P2P {\"mode\":\"bench-switch\",\"iters\":%d,\"sets\":%d,\"bytes\":%zu,\"cpu\":%d", iters, blocks, bytes, cpu);
	struct {
		const char *name;
		double **m;
	} ms[3] = {{"us_per_group", us}, {"instructions_per_group", ins}, {"cycles_per_group", cyc}};
	for (int m = 0; m < (pmu ? 3 : 1); m++) {
		for (int k = 0; k < 2; k++) {
			printf(",\"%s_%d\":[", ms[m].name, k);
			for (int t = 0; t < blocks; t++) printf("%s%.3f", t ? "," : "", ms[m].m[k][t]);
			for (int t = 0; t < blocks; t++) r[t] = ms[m].m[k][t];
			printf("],\"median_%s_%d\":%.3f", ms[m].name, k, median_of(r, blocks));
		}
		for (int t = 0; t < blocks; t++) r[t] = ms[m].m[0][t] > 0 ? ms[m].m[1][t] / ms[m].m[0][t] : 0;
		printf(",\"%s_ratio_1_0\":%.5f", ms[m].name, median_of(r, blocks));
	}
	printf(",\"ok\":%s}\n", ok ? "true" : "false");
	free(v);
	return ok;
}

static int run_bench(int iters, int blocks, size_t bytes, int sync_mode) {
	cudaStream_t s;
	CUDA(cudaStreamCreate(&s));
	void *send, *recv;
	CUDA(cudaMalloc(&send, bytes));
	CUDA(cudaMalloc(&recv, bytes));
	CUDA(cudaMemsetAsync(send, 0x5a, bytes, s));
	double *per = calloc((size_t)blocks, sizeof *per);
	unsigned char *host = malloc(bytes);
	if (!per || !host) {
		fprintf(stderr, "nccl_p2p: out of memory\n");
		return 2;
	}
	ncclComm_t c = comm_new();
	int cpu = bench_pin(0);
	struct bench_pmu pmu;
	int counted = bench_pmu_open(&pmu);
	for (int i = 0; i < 200; i++) group(c, send, recv, bytes, s); /* warm-up */
	CUDA(cudaStreamSynchronize(s));
	int ok = 1;
	if (getenv("NCCL_BENCH_SWITCH_0") && getenv("NCCL_BENCH_SWITCH_1")) {
		ok = bench_switch(c, send, recv, host, iters, blocks, bytes, s, counted ? &pmu : NULL, cpu);
		sync_mode = 3;
	}
	if (sync_mode != 1 && sync_mode != 3) ok &= bench_mode(c, send, recv, host, per, iters, blocks, bytes, 0, s, counted ? &pmu : NULL, cpu);
	if (sync_mode != 0 && sync_mode != 3) ok &= bench_mode(c, send, recv, host, per, iters, blocks, bytes, 1, s, counted ? &pmu : NULL, cpu);
	if (counted) bench_pmu_close(&pmu);
	comm_end(c);
	free(per);
	free(host);
	CUDA(cudaFree(send));
	CUDA(cudaFree(recv));
	return ok ? 0 : 1;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "check")) {
		int n = atoi(argv[2]);
		long b = atol(argv[3]);
		if (n < 1 || n > 100000 || b < 1 || b > (64 << 20)) {
			fprintf(stderr, "nccl_p2p: check N BYTES: N in 1..100000, BYTES in 1..64 MiB\n");
			return 2;
		}
		CUDA(cudaSetDevice(0));
		return run_check(n, (size_t)b);
	}
	if (argc >= 6 && !strcmp(argv[1], "bench")) {
		int iters = atoi(argv[2]), blocks = atoi(argv[3]), sync = atoi(argv[5]);
		long b = atol(argv[4]);
		if (iters < 1 || blocks < 1 || blocks > 1000 || b < 1 || b > (64 << 20) || sync < 0 || sync > 2) {
			fprintf(stderr, "nccl_p2p: bench ITERS BLOCKS BYTES SYNC: ITERS >= 1, BLOCKS 1..1000, BYTES 1..64 MiB, SYNC 0..2\n");
			return 2;
		}
		CUDA(cudaSetDevice(0));
		return run_bench(iters, blocks, (size_t)b, sync);
	}
	fprintf(stderr, "usage: %s check N BYTES | %s bench ITERS BLOCKS BYTES SYNC\n", argv[0], argv[0]);
	return 2;
}

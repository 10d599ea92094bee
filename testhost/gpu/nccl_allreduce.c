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
 * With NCCL_BENCH_CPUS set, each rank's calling thread is pinned to its own CPU after communicator init
 * (bench_cpu.h). Where the machine counts instructions, BLOCKS more blocks follow the timed ones,
 * each group between a start and a stop of the calling thread's user-space instruction and cycle
 * counters (no clock read in them): the instructions and cycles per call of the same path, the
 * figure that noise between processes does not move.
 *
 * With NCCL_BENCH_AB=1 the tuner plugin must be testhost/gpu/tuner_ab.c (NCCL_TUNER_PLUGIN, a path):
 * each of the BLOCKS sets is three blocks, one per configuration (0 none, 1 plugin A, 2 plugin B, in
 * an order that rotates from set to set), the configuration chosen through tuner_ab_select before
 * the block, by every rank at the same group. Per configuration its blocks' figures and their median,
 * and the median over sets of the ratios A/none, B/A and B/none: three configurations compared a few
 * milliseconds apart in one process.
 *
 * NCCL runs a 1-rank all-reduce as a copy and never asks the tuner: NGPUS (NRANKS) must be 2 or more
 * to measure anything. The last line is "NCCL_ALLREDUCE {json}"; exit status 0 when every call
 * succeeded and the sums were right.
 */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <dlfcn.h>
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
#include "bench_cpu.h"
#include "gpu_check.h"

#define MAXG 16
#define MAXB 192
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

/* In-process comparison (NCCL_BENCH_AB): tuner_ab's switch, and how many configurations a set has. */
static void (*ab_select)(int);
static int nsel = 1;
static const char *const cfg_name[3] = {"none", "A", "B"};

/* ab_setup: with NCCL_BENCH_AB=1, find tuner_ab_select in the tuner plugin NCCL loaded (after
 * communicator init); 0 when ready or not asked for. */
static int ab_setup(void) {
	const char *ab = getenv("NCCL_BENCH_AB"), *path = getenv("NCCL_TUNER_PLUGIN");
	if (!ab || strcmp(ab, "1") != 0) return 0;
	void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
	ab_select = h ? (void (*)(int))dlsym(h, "tuner_ab_select") : NULL;
	if (!ab_select) {
		fprintf(stderr, "nccl_allreduce: NCCL_BENCH_AB=1 needs NCCL_TUNER_PLUGIN to be tuner_ab's path (%s)\n",
		        path ? path : "unset");
		return -1;
	}
	nsel = 3;
	return 0;
}

/* cfg_of: the configuration of block b (sets of nsel blocks, the order rotating by one each set). */
static int cfg_of(int b) { return (b % nsel + b / nsel) % nsel; }

/* What this thread drives: n communicators (one per GPU in bench, one in a rank process of
 * bench-procs), their streams, devices and buffers. */
struct ranks {
	int n, dev[MAXG];
	ncclComm_t comm[MAXG];
	cudaStream_t stream[MAXG];
	float *sbuf[MAXG], *rbuf[MAXG];
	size_t count;
};

static void group(const struct ranks *r) {
	NCCL(ncclGroupStart());
	for (int i = 0; i < r->n; i++)
		NCCL(ncclAllReduce(r->sbuf[i], r->rbuf[i], r->count, ncclFloat, ncclSum, r->comm[i], r->stream[i]));
	NCCL(ncclGroupEnd());
}

static void sync_all(const struct ranks *r) {
	for (int i = 0; i < r->n; i++) {
		CUDA(cudaSetDevice(r->dev[i]));
		CUDA(cudaStreamSynchronize(r->stream[i]));
	}
}

/* One untimed block per configuration (connections, first-use allocations), then BLOCKS blocks of
 * ITERS groups (BLOCKS = sets x nsel, configuration cfg_of(b)): the thread's CPU microseconds per group
 * of each block in us[]. With pmu, BLOCKS more blocks, each group inside the counters' window:
 * instructions and cycles per group in ins[] and cyc[]. Streams are synchronized every SYNC_EVERY
 * groups and at the end of every block (so a switch of configuration never meets a group in flight),
 * outside what is measured. */
static void run_blocks(const struct ranks *r, int iters, int blocks, double *us, const struct bench_pmu *pmu,
                       double *ins, double *cyc) {
	for (int b = -nsel; b < blocks; b++) {
		uint64_t t = 0;
		if (ab_select) ab_select(b < 0 ? b + nsel : cfg_of(b));
		for (int it = 0; it < iters; it++) {
			uint64_t t0 = cpu_ns();
			group(r);
			t += cpu_ns() - t0;
			if ((it + 1) % SYNC_EVERY == 0 || it + 1 == iters) sync_all(r);
		}
		if (b >= 0) us[b] = (double)t / 1e3 / iters;
	}
	if (!pmu) return;
	for (int b = 0; b < blocks; b++) {
		uint64_t ni = 0, nc = 0;
		if (ab_select) ab_select(cfg_of(b));
		bench_pmu_take(pmu, &ni, &nc);
		for (int it = 0; it < iters; it++) {
			bench_pmu_on(pmu);
			group(r);
			bench_pmu_off(pmu);
			if ((it + 1) % SYNC_EVERY == 0 || it + 1 == iters) sync_all(r);
		}
		if (bench_pmu_take(pmu, &ni, &nc) != 0) ni = nc = 0;
		ins[b] = (double)ni / iters;
		cyc[b] = (double)nc / iters;
	}
}

/* check_sums: every rank's buffer holds 1 + 2 + ... + nranks (rank k filled k + 1). */
static int check_sums(const struct ranks *r, int nranks, int first_rank, size_t bytes) {
	float *got = malloc(bytes), want = (float)nranks * (float)(nranks + 1) / 2.0f;
	if (!got) return 0;
	int ok = 1;
	for (int i = 0; i < r->n && ok; i++) {
		CUDA(cudaSetDevice(r->dev[i]));
		CUDA(cudaMemcpy(got, r->rbuf[i], bytes, cudaMemcpyDeviceToHost));
		for (size_t k = 0; k < r->count; k++)
			if (got[k] != want) {
				fprintf(stderr, "nccl_allreduce: rank %d element %zu is %g, want %g\n", first_rank + i, k, got[k], want);
				ok = 0;
				break;
			}
	}
	free(got);
	return ok;
}

/* setup_buffers: a stream and two buffers per communicator, rank k's send buffer filled with k + 1. */
static int setup_buffers(struct ranks *r, int first_rank, size_t bytes) {
	float *fill = malloc(bytes);
	if (!fill) return 0;
	for (int i = 0; i < r->n; i++) {
		CUDA(cudaSetDevice(r->dev[i]));
		CUDA(cudaStreamCreate(&r->stream[i]));
		CUDA(cudaMalloc((void **)&r->sbuf[i], bytes));
		CUDA(cudaMalloc((void **)&r->rbuf[i], bytes));
		for (size_t k = 0; k < r->count; k++) fill[k] = (float)(first_rank + i + 1);
		CUDA(cudaMemcpy(r->sbuf[i], fill, bytes, cudaMemcpyHostToDevice));
	}
	free(fill);
	return 1;
}

static void teardown(struct ranks *r) {
	for (int i = 0; i < r->n; i++) {
		CUDA(cudaSetDevice(r->dev[i]));
		CUDA(cudaFree(r->sbuf[i]));
		CUDA(cudaFree(r->rbuf[i]));
		NCCL(ncclCommDestroy(r->comm[i]));
	}
}

static void print_list(const char *name, const double *v, int n) {
	printf(",\"%s\":[", name);
	for (int b = 0; b < n; b++) printf("%s%.4f", b ? "," : "", v[b]);
	printf("]");
}

/* print_metric: one measure of every block (sets x nsel of them): its list and median, or with
 * several configurations each one's list and median and the medians over sets of the ratios. */
static void print_metric(const char *name, const double *v, int sets) {
	if (nsel == 1) {
		print_list(name, v, sets);
		printf(",\"median_%s\":%.4f", name, median(v, sets));
		return;
	}
	double by[3][MAXB], r[MAXB];
	char key[96];
	for (int b = 0; b < sets * nsel; b++) by[cfg_of(b)][b / nsel] = v[b];
	for (int k = 0; k < nsel; k++) {
		snprintf(key, sizeof key, "%s_%s", name, cfg_name[k]);
		print_list(key, by[k], sets);
		printf(",\"median_%s\":%.4f", key, median(by[k], sets));
	}
	static const int pairs[3][2] = {{1, 0}, {2, 1}, {2, 0}};
	for (int p = 0; p < 3; p++) {
		int x = pairs[p][0], y = pairs[p][1];
		for (int t = 0; t < sets; t++) r[t] = by[y][t] > 0 ? by[x][t] / by[y][t] : 0;
		printf(",\"%s_ratio_%s_%s\":%.5f", name, cfg_name[x], cfg_name[y], median(r, sets));
	}
}

/* print_result: the last line. ins/cyc NULL when no counter ran; cpus: the pinned CPU per rank
 * (-1 when not pinned). BLOCKS counts sets. */
static void print_result(int n, size_t bytes, int iters, int blocks, int ok, const double *per_call,
                         const double *ins, const double *cyc, const int *cpus, int ncpus, const char *mode) {
	int v = 0;
	ncclGetVersion(&v);
	printf("NCCL_ALLREDUCE {\"nccl_version\":%d,\"mode\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"iters\":%d,"
	       "\"configurations\":%d,\"ok\":%s,\"cpus\":[", v, mode, n, bytes, iters, nsel, ok ? "true" : "false");
	for (int i = 0; i < ncpus; i++) printf("%s%d", i ? "," : "", cpus[i]);
	printf("]");
	if (ins) {
		print_metric("instructions_per_call", ins, blocks);
		print_metric("cycles_per_call", cyc, blocks);
	}
	print_metric("cpu_us_per_call", per_call, blocks);
	printf("}\n");
}

/* What the rank processes of bench-procs share: the id (rank 0 posts it, then sets id_ready), and
 * per rank its figures per block, whether it counted, its CPU and its verdict. */
struct shared {
	volatile int id_ready;
	ncclUniqueId id;
	double per_call[MAXG][MAXB], ins[MAXG][MAXB], cyc[MAXG][MAXB];
	int counted[MAXG], cpu[MAXG], ok[MAXG];
};

static int rank_main(struct shared *sh, int n, int rank, int iters, int blocks, size_t bytes) {
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
	struct ranks r = {.n = 1, .dev = {rank % avail}, .count = bytes / sizeof(float)};
	CUDA(cudaSetDevice(r.dev[0]));
	if (rank == 0) {
		NCCL(ncclGetUniqueId(&sh->id));
		__atomic_store_n(&sh->id_ready, 1, __ATOMIC_RELEASE);
	} else {
		while (!__atomic_load_n(&sh->id_ready, __ATOMIC_ACQUIRE)) usleep(1000);
	}
	NCCL(ncclCommInitRank(&r.comm[0], n, sh->id, rank));
	if (ab_setup() != 0 || !setup_buffers(&r, rank, bytes)) return 2;
	sh->cpu[rank] = bench_pin(rank);
	struct bench_pmu pmu;
	sh->counted[rank] = bench_pmu_open(&pmu);
	run_blocks(&r, iters, blocks * nsel, sh->per_call[rank], sh->counted[rank] ? &pmu : NULL, sh->ins[rank],
	           sh->cyc[rank]);
	if (sh->counted[rank]) bench_pmu_close(&pmu);
	sh->ok[rank] = check_sums(&r, n, rank, bytes);
	teardown(&r);
	return sh->ok[rank] ? 0 : 1;
}

/* bench-procs: no CUDA or NCCL call in the parent before the fork (a child must start CUDA afresh). */
static int bench_procs(int n, int iters, int blocks, size_t bytes) {
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) return 2;
	memset(sh, 0, sizeof *sh);
	const char *ab = getenv("NCCL_BENCH_AB");
	if (ab && strcmp(ab, "1") == 0) nsel = 3; /* the ranks find tuner_ab themselves, or fail */
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
	/* per block, the mean over the ranks */
	double per_call[MAXB], ins[MAXB], cyc[MAXB];
	int counted = 1;
	for (int r = 0; r < n; r++) {
		ok &= sh->ok[r];
		counted &= sh->counted[r];
	}
	for (int b = 0; b < blocks * nsel; b++) {
		per_call[b] = ins[b] = cyc[b] = 0;
		for (int r = 0; r < n; r++) {
			per_call[b] += sh->per_call[r][b] / n;
			ins[b] += sh->ins[r][b] / n;
			cyc[b] += sh->cyc[r][b] / n;
		}
	}
	print_result(n, bytes, iters, blocks, ok, per_call, counted ? ins : NULL, cyc, sh->cpu, n, "procs");
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
		if (n < 2 || n > MAXG || iters < 1 || blocks < 1 || blocks > MAXB / 3 || count == 0) {
			fprintf(stderr, "nccl_allreduce: need 2 <= NRANKS <= %d, ITERS >= 1, 1 <= BLOCKS <= %d, BYTES >= 4\n", MAXG,
			        MAXB / 3);
			return 2;
		}
		return bench_procs(n, iters, blocks, bytes);
	}
	int avail = 0;
	CUDA(cudaGetDeviceCount(&avail));
	if (n < 2 || n > MAXG || n > avail || iters < 1 || blocks < 1 || blocks > MAXB / 3 || count == 0) {
		fprintf(stderr, "nccl_allreduce: need 2 <= NGPUS <= %d (this machine has %d GPUs), ITERS >= 1, "
		                "1 <= BLOCKS <= %d, BYTES >= 4\n", MAXG, avail, MAXB / 3);
		return 2;
	}
	struct ranks r = {.n = n, .count = count};
	for (int i = 0; i < n; i++) r.dev[i] = i;
	NCCL(ncclCommInitAll(r.comm, n, r.dev));
	if (ab_setup() != 0 || !setup_buffers(&r, 0, bytes)) return 2;
	int cpu = bench_pin(0);
	struct bench_pmu pmu;
	int counted = bench_pmu_open(&pmu);
	double per_group[MAXB], per_call[MAXB], ins[MAXB], cyc[MAXB];
	run_blocks(&r, iters, blocks * nsel, per_group, counted ? &pmu : NULL, ins, cyc);
	for (int b = 0; b < blocks * nsel; b++) {
		per_call[b] = per_group[b] / n;
		ins[b] /= n;
		cyc[b] /= n;
	}
	if (counted) bench_pmu_close(&pmu);
	int ok = check_sums(&r, n, 0, bytes);
	teardown(&r);
	print_result(n, bytes, iters, blocks, ok, per_call, counted ? ins : NULL, cyc, &cpu, 1, "threads");
	return ok ? 0 : 1;
}

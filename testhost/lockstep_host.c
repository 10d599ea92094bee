/* SPDX-License-Identifier: MIT */
/*
 * lockstep_host: one rank of a job for the control plane's cross-process commands (ncclbpf check).
 *
 *   lockstep_host LIB SECONDS PERIOD_US EPOCH_NS
 *
 * Loads LIB as NCCL's tuner (v6), opens one communicator with id 0xc0ffee (LOCKSTEP_RANKS ranks, 8
 * when unset: give it the number of processes started, so that the job's ranks are all there) and makes
 * getCollInfo call k at CLOCK_MONOTONIC time EPOCH_NS + k * PERIOD_US (late calls are made at
 * once), AllReduce over sizes cycling 1 KiB .. 4 MiB, each followed by getChunkSize, until SECONDS
 * have passed. Several processes given the same EPOCH_NS stay at the same call within a few calls,
 * as the ranks of a job do (their collectives wait for each other). Prints "serving pid N".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void quiet_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 5) {
		fprintf(stderr, "usage: lockstep_host LIB SECONDS PERIOD_US EPOCH_NS\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 2;
	}
	const host_tuner_v6_t *tuner = dlsym(lib, "ncclTunerPlugin_v6");
	if (!tuner) {
		fprintf(stderr, "%s: no ncclTunerPlugin_v6\n", argv[1]);
		return 2;
	}
	double seconds = atof(argv[2]);
	uint64_t period = (uint64_t)atoll(argv[3]) * 1000ull;
	uint64_t epoch = (uint64_t)strtoull(argv[4], NULL, 10);
	if (period == 0 || seconds <= 0) {
		fprintf(stderr, "lockstep_host: SECONDS and PERIOD_US must be positive\n");
		return 2;
	}
	void *ctx = NULL;
	int nranks = 8;
	const char *r = getenv("LOCKSTEP_RANKS");
	if (r && atoi(r) > 0)
		nranks = atoi(r);
	host_nvl_info_t nvl = {1, nranks, nranks};
	if (tuner->init(&ctx, 0xc0ffee, nranks, 1, quiet_log, &nvl, NULL) != ncclSuccess || !ctx) {
		fprintf(stderr, "tuner init failed\n");
		return 2;
	}
	printf("serving pid %d\n", (int)getpid());
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	for (uint64_t k = 0;; k++) {
		uint64_t due = epoch + k * period, t = now_ns();
		if (t >= end)
			break;
		if (due > t) {
			struct timespec ts = {(time_t)((due - t) / 1000000000ull), (long)((due - t) % 1000000000ull)};
			nanosleep(&ts, NULL);
		}
		float table[21];
		for (int i = 0; i < 21; i++)
			table[i] = 1.0f + (float)i;
		int nch = 0;
		size_t bytes = (size_t)1024 << (2 * (k % 7));
		tuner->getCollInfo(ctx, 4 /* AllReduce */, bytes, 1, (float **)(void *)table, 7, 3, 0, &nch);
		size_t chunk = 131072;
		tuner->getChunkSize(ctx, 4, bytes, 1, 2, nch > 0 ? nch : 8, &chunk);
	}
	tuner->finalize(ctx);
	return 0;
}

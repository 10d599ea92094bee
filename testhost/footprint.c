/* SPDX-License-Identifier: MIT */
/*
 * footprint.c: what loading a tuner plugin costs the host process (BENCHMARKS.md, "Footprint").
 *
 *   footprint LIB
 *       dlopen LIB (RTLD_NOW), init one communicator through ncclTunerPlugin_v5, rest REST_MS (300),
 *       then make CALLS getCollInfo calls on 8 threads (200000 each). Prints "key value" lines:
 *       dlopen_us, init_us, threads and RSS (kB) before, after dlopen, after init, at rest and
 *       after the calls. Works for libncclbpf.so and for any plugin exporting ncclTunerPlugin_v5
 *       (testhost/native_size_aware.c, the native comparison).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

static long status_field(const char *key) {
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			v = atol(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void quiet(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static const host_tuner_v5_t *tuner;
static long calls_per_thread;

static void *caller(void *arg) {
	void *ctx = NULL;
	host_nvl_info_t nvl = {1, 8, 8};
	if (tuner->init(&ctx, 0x100 + (uint64_t)(uintptr_t)arg, 8, 1, quiet, &nvl, NULL) != ncclSuccess)
		exit(1);
	float table[7][3];
	for (long i = 0; i < calls_per_thread; i++) {
		for (int k = 0; k < 21; k++)
			((float *)table)[k] = 1.0f + (float)k;
		int nch = 0;
		float *rows[7];
		for (int a = 0; a < 7; a++)
			rows[a] = table[a];
		tuner->getCollInfo(ctx, 4, (size_t)1 << (10 + i % 16), 1, (float **)rows, 7, 3, 0, &nch);
	}
	tuner->finalize(ctx);
	return NULL;
}

#define REPORT(stage)                                                                                                 \
	printf("threads_" stage " %ld\nrss_kb_" stage " %ld\n", status_field("Threads"), status_field("VmRSS"))

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: footprint LIB\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	long rest_ms = getenv("REST_MS") ? atol(getenv("REST_MS")) : 300;
	calls_per_thread = getenv("CALLS") ? atol(getenv("CALLS")) : 200000;
	REPORT("before");
	double t0 = now_us();
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	double t1 = now_us();
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	REPORT("dlopen");
	tuner = dlsym(lib, "ncclTunerPlugin_v5");
	if (!tuner) {
		fprintf(stderr, "no ncclTunerPlugin_v5\n");
		return 1;
	}
	void *ctx = NULL;
	host_nvl_info_t nvl = {1, 8, 8};
	double t2 = now_us();
	if (tuner->init(&ctx, 1, 8, 1, quiet, &nvl, NULL) != ncclSuccess)
		return 1;
	double t3 = now_us();
	printf("dlopen_us %.0f\ninit_us %.0f\n", t1 - t0, t3 - t2);
	REPORT("init");
	usleep((useconds_t)rest_ms * 1000);
	REPORT("rest");
	pthread_t th[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, caller, (void *)(uintptr_t)i);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	usleep((useconds_t)rest_ms * 1000);
	REPORT("load"); /* the 8 calling threads have exited */
	tuner->finalize(ctx);
	return 0;
}

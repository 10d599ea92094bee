/* SPDX-License-Identifier: MIT */
/*
 * rccl_names.c: loads libncclbpf.so the way RCCL resolves plugin names (read from RCCL's
 * src/plugin/plugin_open.cc; written here, not copied), as a C host test of the names RCCL uses:
 *
 *   rccl_names TYPE PREFIX [ENV]
 *       TYPE tuner|profiler; PREFIX the file-name prefix the RCCL release uses for TYPE
 *       ("librccl-tuner" in older releases, "libnccl-tuner" in newer ones; "librccl-profiler");
 *       ENV the value of NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN (absent: unset). As RCCL: ENV
 *       is tried as given (dlopen: an absolute path, or a name the loader searches); if that fails
 *       and ENV has no '/' and is not a library name (lib*.so), PREFIX-ENV.so; with ENV unset,
 *       PREFIX.so. Then the plugin's symbol (ncclTunerPlugin_v5 / ncclProfiler_v5, the versions
 *       RCCL 2.28-based releases take) and its init.
 *
 * For the tuner, one getCollInfo with the cost table as RCCL fills it: only Tree and Ring cells
 * available (RCCL has no CollNet, NVLS, NVLS_TREE or PAT on its GPUs: their cells are -1), and checks
 * that the cell the policy leaves cheapest is one RCCL can run. Prints "RCCL NAME OK: FILE"; exit 1
 * on a failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_abi.h"
#include "../plugin/profiler_abi.h"

static void quiet(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static void *open_as_rccl(const char *prefix, const char *env, char *file, size_t n) {
	void *h = NULL;
	if (env && *env) {
		snprintf(file, n, "%s", env);
		if ((h = dlopen(file, RTLD_NOW | RTLD_LOCAL))) return h;
		size_t l = strlen(env);
		int libname = strncmp(env, "lib", 3) == 0 && l >= 3 && strcmp(env + l - 3, ".so") == 0;
		if (strchr(env, '/') || libname) return NULL;
		snprintf(file, n, "%s-%s.so", prefix, env);
	} else {
		snprintf(file, n, "%s.so", prefix);
	}
	return dlopen(file, RTLD_NOW | RTLD_LOCAL);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: %s tuner|profiler PREFIX [ENV]\n", argv[0]);
		return 2;
	}
	char file[512];
	void *h = open_as_rccl(argv[2], argc > 3 ? argv[3] : NULL, file, sizeof file);
	if (!h) {
		printf("FAIL: %s not loaded: %s\n", file, dlerror());
		return 1;
	}
	if (!strcmp(argv[1], "profiler")) {
		nbp_profiler_v5_t *p = dlsym(h, "ncclProfiler_v5");
		void *ctx = NULL;
		int mask = -1;
		if (!p || p->init(&ctx, 0x51, &mask, "rccl", 1, 8, 0, quiet) != 0 || !ctx) {
			printf("FAIL: %s: no ncclProfiler_v5 or its init failed\n", file);
			return 1;
		}
		p->finalize(ctx);
		printf("RCCL NAME OK: %s (profiler v5, mask %#x)\n", file, mask);
		return 0;
	}
	host_tuner_v5_t *t = dlsym(h, "ncclTunerPlugin_v5");
	void *ctx = NULL;
	if (!t || t->init(&ctx, 0x52, 8, 1, quiet, NULL, NULL) != 0) {
		printf("FAIL: %s: no ncclTunerPlugin_v5 or its init failed\n", file);
		return 1;
	}
	int bad = 0;
	for (size_t bytes = 1024; bytes <= (64u << 20); bytes *= 8) {
		float cost[7][3];
		for (int a = 0; a < 7; a++)
			for (int p = 0; p < 3; p++) cost[a][p] = a <= 1 ? 10.0f + (float)a + (float)p : -1.0f;
		int nch = 0;
		t->getCollInfo(ctx, 4 /* AllReduce */, bytes, 1, (float **)cost, 7, 3, 0, &nch);
		int best = -1;
		for (int i = 0; i < 21; i++) {
			float v = cost[i / 3][i % 3];
			if (v >= 0 && (best < 0 || v < cost[best / 3][best % 3])) best = i;
		}
		for (int a = 2; a < 7; a++)
			for (int p = 0; p < 3; p++)
				if (cost[a][p] != -1.0f) {
					printf("FAIL: %s: %zu bytes: cell algorithm %d protocol %d that RCCL ignores was set to %g\n", file,
					       bytes, a, p, cost[a][p]);
					bad = 1;
				}
		if (best < 0 || best / 3 > 1) {
			printf("FAIL: %s: %zu bytes: cheapest cell %d is not Tree or Ring\n", file, bytes, best);
			bad = 1;
		}
	}
	t->finalize(ctx);
	if (!bad) printf("RCCL NAME OK: %s (tuner v5, only Tree/Ring cells chosen)\n", file);
	return bad;
}

/* SPDX-License-Identifier: MIT */
/*
 * env_host.c: NCCL's env plugin loader, as a C host: dlopen(RTLD_NOW | RTLD_LOCAL), ncclEnvPlugin_vN,
 * init with NCCL's version and (v2) a logger, then getEnv for each name given, as NCCL's
 * ncclGetEnv does; finalize. Prints what it got, the log lines and the library's env digest.
 *
 *   env_host LIB VER NAME...
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../plugin/env_abi.h"

static int warnings;

static void host_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	(void)file, (void)line;
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (level == 2) warnings++;
	printf("log %s %#lx: %s\n", level == 2 ? "WARN" : level == 3 ? "INFO" : "OTHER", flags, buf);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: env_host LIB VER NAME...\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 2;
	}
	int ver = argv[2][0] - '0';
	const char *sym = ver == 2 ? "ncclEnvPlugin_v2" : "ncclEnvPlugin_v1";
	const void *p = dlsym(lib, sym);
	uint64_t (*digest)(void) = (uint64_t(*)(void))dlsym(lib, "ncclbpf_env_digest");
	if (!p || !digest) {
		fprintf(stderr, "%s: no %s or ncclbpf_env_digest\n", argv[1], sym);
		return 2;
	}
	const char *(*get)(const char *);
	int (*fin)(void);
	int rc;
	if (ver == 2) {
		const nbe_env_v2_t *e = p;
		printf("name %s\n", e->name);
		rc = e->init(2, 30, 7, "", host_log);
		get = e->getEnv, fin = e->finalize;
	} else {
		const nbe_env_v1_t *e = p;
		printf("name %s\n", e->name);
		rc = e->init(2, 21, 5, "");
		get = e->getEnv, fin = e->finalize;
	}
	if (rc != 0) {
		printf("init failed: %d\n", rc);
		return 1;
	}
	for (int i = 3; i < argc; i++) {
		const char *v = get(argv[i]);
		const char *again = get(argv[i]); /* NCCL may ask again: same value, logged once */
		if ((v == NULL) != (again == NULL) || (v && strcmp(v, again) != 0)) {
			printf("FAIL %s: %s then %s\n", argv[i], v ? v : "(unset)", again ? again : "(unset)");
			return 1;
		}
		printf("%s=%s\n", argv[i], v ? v : "(unset)");
	}
	printf("digest %016llx\n", (unsigned long long)digest());
	printf("warnings %d\n", warnings);
	fin();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * env.c: NCCL's env plugin slot (ncclEnvPlugin_v2, _v1), served by the same library.
 *
 * With NCCL_ENV_PLUGIN naming libncclbpf.so, NCCL asks getEnv for every NCCL_* parameter it reads.
 * The values come from the file NCCLBPF_ENV_FILE names, in the syntax of NCCL's nccl.conf (one
 * NAME=VALUE a line; '#' starts a comment line; spaces around the name and value are dropped);
 * names the file does not set come from the process environment, as without the plugin. No file
 * (unset, unreadable): one warning, then NCCL's normal behaviour. v2's logger says what was read
 * and, once per name, each value served from the file.
 *
 * Every distinct (name, value) served, from the file or the environment, is folded into a digest
 * (a sum of 64-bit hashes: the order of the calls does not matter). Each tuner communicator's
 * decision digest starts from it, so that `ncclbpf check` tells apart the ranks that NCCL was given
 * different environments for, a known cause of hangs.
 *
 * None of this is on a hot path: NCCL reads its parameters at init. A mutex guards the table.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_abi.h"

#define NBE_MAX_VARS 1024  /* values a file may set */
#define NBE_MAX_SEEN 2048  /* distinct names served, folded into the digest */
#define NBE_LINE 4096
#define NBE_LOG_WARN 2
#define NBE_LOG_INFO 3
#define NBE_SUBSYS_INIT 0x1
#define NBE_SUBSYS_ENV 0x80

struct nbe_var {
	char *name, *value;
	int logged;
};

static pthread_mutex_t nbe_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nbe_var nbe_vars[NBE_MAX_VARS];
static int nbe_nvars;
static char *nbe_seen[NBE_MAX_SEEN]; /* names already folded into the digest */
static int nbe_nseen;
static _Atomic uint64_t nbe_digest;
static nbe_logger_t nbe_log;
static char nbe_file[1024];
static int nbe_inited;

static void nbe_say(int level, const char *msg) {
	if (nbe_log)
		nbe_log(level, level == NBE_LOG_WARN ? NBE_SUBSYS_INIT | NBE_SUBSYS_ENV : NBE_SUBSYS_ENV, "ncclbpf", 0,
		        "%s", msg);
	else if (level == NBE_LOG_WARN)
		fprintf(stderr, "%s\n", msg); /* v1 has no logger */
}

static uint64_t nbe_hash(const char *name, const char *value) {
	uint64_t h = 14695981039346656037ull;
	for (const char *s = name; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
	h = (h ^ '=') * 1099511628211ull;
	for (const char *s = value ? value : ""; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
	h ^= value ? 1 : 2; /* unset differs from empty */
	return h * 0x9e3779b97f4a7c15ull;
}

static char *nbe_trim(char *s) {
	while (*s == ' ' || *s == '\t') s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
	return s;
}

/* nbe_load reads the file into the table; the last setting of a name wins. Returns the values read,
 * or -1 when the file cannot be opened. */
static int nbe_load(const char *path) {
	FILE *f = fopen(path, "r");
	if (!f) return -1;
	char line[NBE_LINE];
	int n = 0, dropped = 0;
	while (fgets(line, sizeof line, f)) {
		char *s = nbe_trim(line);
		if (*s == 0 || *s == '#') continue;
		char *eq = strchr(s, '=');
		if (!eq) continue;
		*eq = 0;
		char *name = nbe_trim(s), *value = nbe_trim(eq + 1);
		if (*name == 0) continue;
		int i;
		for (i = 0; i < nbe_nvars && strcmp(nbe_vars[i].name, name) != 0; i++)
			;
		if (i == nbe_nvars) {
			if (nbe_nvars == NBE_MAX_VARS) {
				dropped++;
				continue;
			}
			nbe_vars[i].name = strdup(name);
			nbe_nvars++;
		} else {
			free(nbe_vars[i].value);
		}
		nbe_vars[i].value = strdup(value);
		n++;
	}
	fclose(f);
	if (dropped) {
		char msg[256];
		snprintf(msg, sizeof msg, "ncclbpf: env: %s sets more than %d names: %d settings ignored", path, NBE_MAX_VARS,
		         dropped);
		nbe_say(NBE_LOG_WARN, msg);
	}
	return n;
}

static int nbe_init_common(uint8_t major, uint8_t minor, uint8_t patch, nbe_logger_t log) {
	pthread_mutex_lock(&nbe_lock);
	nbe_log = log;
	if (!nbe_inited) {
		nbe_inited = 1;
		const char *path = getenv("NCCLBPF_ENV_FILE");
		char msg[1400];
		if (!path || !*path) {
			snprintf(msg, sizeof msg,
			         "ncclbpf: env: NCCL_ENV_PLUGIN names this library but NCCLBPF_ENV_FILE is unset: NCCL %u.%u.%u "
			         "reads the process environment as usual",
			         major, minor, patch);
			nbe_say(NBE_LOG_WARN, msg);
		} else if (snprintf(nbe_file, sizeof nbe_file, "%s", path), nbe_load(path) < 0) {
			snprintf(msg, sizeof msg,
			         "ncclbpf: env: NCCLBPF_ENV_FILE=%s cannot be read: NCCL %u.%u.%u reads the process environment "
			         "as usual",
			         path, major, minor, patch);
			nbe_say(NBE_LOG_WARN, msg);
		} else {
			snprintf(msg, sizeof msg, "ncclbpf: env: %d values from %s for NCCL %u.%u.%u (the rest from the environment)",
			         nbe_nvars, path, major, minor, patch);
			nbe_say(NBE_LOG_INFO, msg);
		}
	}
	pthread_mutex_unlock(&nbe_lock);
	return 0;
}

static int nbe_init_v2(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix, nbe_logger_t log) {
	(void)suffix;
	return nbe_init_common(major, minor, patch, log);
}

static int nbe_init_v1(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix) {
	(void)suffix;
	return nbe_init_common(major, minor, patch, NULL);
}

static int nbe_finalize(void) {
	/* Values stay allocated: NCCL may still hold pointers returned by getEnv. */
	return 0;
}

static const char *nbe_get_env(const char *name) {
	if (!name) return NULL;
	pthread_mutex_lock(&nbe_lock);
	const char *v = NULL;
	struct nbe_var *var = NULL;
	for (int i = 0; i < nbe_nvars; i++)
		if (strcmp(nbe_vars[i].name, name) == 0) {
			var = &nbe_vars[i];
			v = var->value;
			break;
		}
	if (!var) v = getenv(name);
	int seen = 0;
	for (int i = 0; i < nbe_nseen && !seen; i++) seen = strcmp(nbe_seen[i], name) == 0;
	if (!seen && nbe_nseen < NBE_MAX_SEEN) {
		nbe_seen[nbe_nseen++] = strdup(name);
		atomic_fetch_add(&nbe_digest, nbe_hash(name, v));
	}
	if (var && !var->logged) {
		var->logged = 1;
		char msg[1400];
		snprintf(msg, sizeof msg, "ncclbpf: env: %s=%s (from %s)", name, v, nbe_file);
		nbe_say(NBE_LOG_INFO, msg);
	}
	pthread_mutex_unlock(&nbe_lock);
	return v;
}

/* ncclbpf_env_digest is the digest of every value served so far (0: none, or the env plugin is not
 * in use). */
uint64_t ncclbpf_env_digest(void) { return atomic_load(&nbe_digest); }

__attribute__((visibility("default"))) const nbe_env_v2_t ncclEnvPlugin_v2 = {"ncclbpf", nbe_init_v2, nbe_finalize,
                                                                             nbe_get_env};
__attribute__((visibility("default"))) const nbe_env_v1_t ncclEnvPlugin_v1 = {"ncclbpf", nbe_init_v1, nbe_finalize,
                                                                             nbe_get_env};

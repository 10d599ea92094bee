/* SPDX-License-Identifier: MIT */
/*
 * env_abi.h: NCCL's env plugin ABI, versions 1 and 2 (fact sheet section 5; LP64), as env.c exports
 * it. NCCL looks up ncclEnvPlugin_v2, then _v1, once per process before any communicator, and from
 * then on asks getEnv for every NCCL_* parameter. v2's init also passes NCCL's logger.
 */
#ifndef NCCLBPF_ENV_ABI_H
#define NCCLBPF_ENV_ABI_H

#include <stdint.h>

typedef void (*nbe_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

/* ncclEnv_v2_t */
typedef struct {
	const char *name;
	int (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char *suffix, nbe_logger_t log);
	int (*finalize)(void);
	const char *(*getEnv)(const char *name); /* NULL: not set */
} nbe_env_v2_t;

/* ncclEnv_v1_t: no logger */
typedef struct {
	const char *name;
	int (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char *suffix);
	int (*finalize)(void);
	const char *(*getEnv)(const char *name);
} nbe_env_v1_t;

_Static_assert(sizeof(nbe_env_v2_t) == 32 && sizeof(nbe_env_v1_t) == 32, "ncclEnv_v1_t, _v2_t");

#endif /* NCCLBPF_ENV_ABI_H */

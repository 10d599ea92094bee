/*
 * enginetest.h: native side of package enginetest. Loops that call a
 * compiled program's entry point (or a plain C function with the same
 * signature) many times in one cgo call, the plain C array and hash table
 * the benchmarks compare the maps with, and a pthread runner for the
 * native atomicity test.
 */
#ifndef NCCLBPF_ENGINETEST_H
#define NCCLBPF_ENGINETEST_H

#include <stdint.h>

/* The context the test programs get in r1 (see ctx.go). */
struct et_ctx {
  uint64_t key, val, flags, out;
};

/* A program entry or a plain C operation: uint64_t fn(void *ctx). */
typedef uint64_t (*et_fn)(void *ctx);

/* et_loop calls fn n times with ctx.key = i & mask, ctx.val = i and
 * ctx.flags = flags, and returns the sum of the results. */
uint64_t et_loop(uintptr_t fn, uint64_t n, uint64_t mask, uint64_t flags);

/* et_timed_loop is et_loop that returns the calling thread's CPU time
 * spent in the loop, in ns (CLOCK_THREAD_CPUTIME_ID: time the thread was
 * descheduled does not count); *sum gets the sum of the results. */
uint64_t et_timed_loop(uintptr_t fn, uint64_t n, uint64_t mask, uint64_t flags, uint64_t *sum);

/* Plain C counterparts of the benchmark programs. */
enum {
  ET_C_EMPTY,         /* return ctx->key */
  ET_C_ARRAY_LOOKUP,  /* value[0] of array[key], 0 when out of range */
  ET_C_ARRAY_UPDATE,  /* array[key] = {val, key}; 0 or -E2BIG/-EINVAL/-EEXIST */
  ET_C_HASH_LOOKUP,   /* value[0] of hash[key], 0 when missing */
  ET_C_HASH_UPDATE,   /* hash[key] = {val, key} with flags */
  ET_C_COUNT
};
uintptr_t et_c_fn(int which);
/* et_c_setup (re)creates the C array and hash table with `entries`
 * entries (a power of two): array[k] = {k, 0} and the table holds keys
 * 0..entries-1 with value {key, 0}. Returns 0 or -ENOMEM. */
int et_c_setup(uint32_t entries);
/* Reads back value[0] of the C hash table's key (for the tests); 1 when
 * found. */
int et_c_hash_get(uint64_t key, uint64_t *v0);

/* et_threads runs `threads` pthreads (at most 64); each calls fn `iters`
 * times with its own context {key = thread index}. Returns 0, or -1 if a
 * thread could not be started. *sum gets the sum of all results. */
int et_threads(uintptr_t fn, int threads, uint64_t iters, uint64_t *sum);

#endif

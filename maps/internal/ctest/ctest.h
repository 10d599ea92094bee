/*
 * ctest.h: a C test bridge for package maps. Go tests cannot use cgo, so
 * this package calls the native helpers through their function pointers
 * (as JIT code does), runs multi-threaded hammer tests on native pthreads,
 * and runs the C benchmark loops.
 */
#ifndef NCCLBPF_CTEST_H
#define NCCLBPF_CTEST_H

#include <stdint.h>

typedef uint64_t (*ctest_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

/* Helper addresses and maps used by the hammer and the benchmarks. */
struct ctest_env {
  uintptr_t lookup, update, del, rb_output, rb_reserve, rb_submit, rb_discard, smp_id;
  uintptr_t array;  /* array: key u32, value 16 bytes, >= 16 + threads*64 entries */
  uintptr_t hash;   /* hash: key u64, value 16 bytes, max 16 + threads*64 entries */
  uintptr_t lru;    /* LRU hash: key u64, value 16 bytes, any size */
  uintptr_t percpu; /* per-CPU array: key u32, value 8 bytes, >= 1 entry */
  uintptr_t ring;   /* ring buffer, or 0 */
};

#define CTEST_MAX_THREADS 16
#define CTEST_KEYS_PER_THREAD 64
#define CTEST_SHARED 16
#define CTEST_LRU_KEYS 1024

struct ctest_thread_result {
  uint64_t ops;
  uint64_t array_adds[CTEST_SHARED], hash_adds[CTEST_SHARED], percpu_adds;
  /* final model of this thread's own keys */
  uint8_t hash_present[CTEST_KEYS_PER_THREAD];
  uint64_t hash_value[CTEST_KEYS_PER_THREAD];
  uint64_t array_value[CTEST_KEYS_PER_THREAD];
  uint64_t ring_sent, ring_full, ring_discarded;
  uint64_t errors;
  char first_error[160];
};

struct ctest_hammer_result {
  struct ctest_thread_result t[CTEST_MAX_THREADS];
};

/* Runs `threads` pthreads for duration_ms; returns 0 or -1 if a thread
 * could not be started. Errors found on the way are in the results. */
int ctest_hammer(const struct ctest_env *env, int threads, uint64_t duration_ms,
                 struct ctest_hammer_result *res);

/* Churn: each of `churners` threads moves its element back and forth
 * between two keys (churn_keys[2i], churn_keys[2i+1]: delete one, insert
 * the other) in a hash map (key u64, value u64) that is otherwise full, so
 * the freed element is reused at once, in the other key's bucket. Meanwhile
 * `readers` threads look up the never-deleted keys persist[0..npersist-1]
 * (value = key). Returns the number of failed or wrong lookups (and failed
 * churn operations); *lookups gets how many lookups were made. */
uint64_t ctest_churn(const struct ctest_env *env, uintptr_t map, const uint64_t *persist,
                     uint32_t npersist, const uint64_t *churn_keys, int churners, int readers,
                     uint64_t duration_ms, uint64_t *lookups);

/* Benchmark: ns per operation of each variant, in this order. */
enum {
  CB_ARRAY_LOOKUP_HELPER, CB_ARRAY_LOOKUP_PLAIN, CB_ARRAY_LOOKUP_INLINE,
  CB_ARRAY_UPDATE_HELPER, CB_ARRAY_UPDATE_PLAIN,
  CB_HASH_LOOKUP_HELPER, CB_HASH_LOOKUP_PLAIN,
  CB_HASH_UPDATE_HELPER, CB_HASH_UPDATE_PLAIN,
  CB_LRU_LOOKUP_HELPER, CB_PERCPU_LOOKUP_HELPER,
  CB_COUNT
};
/* The maps in env must hold >= 1024 entries (keys 0..1023 are used). */
void ctest_bench(const struct ctest_env *env, uint64_t iters, double ns_per_op[CB_COUNT]);

#endif

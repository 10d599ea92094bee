/*
 * nbpf_helpers.c: the map helpers programs call (lookup, update, delete),
 * and the small helpers ktime_get_ns, get_prandom_u32 and
 * get_smp_processor_id. All have the System V signature
 * uint64_t f(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
 * errors are returned as negative errno values in the 64-bit result.
 *
 * The verifier guarantees that map arguments are map handles and that key
 * and value pointers cover key_size / value_size readable bytes.
 */
#include <time.h>

#include "nbpf_internal.h"

/* ---- per-thread state: the per-CPU slot and the random generator ---- */

static uint32_t next_slot;                  /* atomic: threads seen so far */
static __thread uint32_t tls_slot_plus1;    /* 0: not assigned yet */
static __thread uint64_t tls_rand;          /* xorshift64 state, never 0 */

static uint32_t slot_assign(void) {
  uint32_t n = __atomic_fetch_add(&next_slot, 1u, __ATOMIC_RELAXED);
  tls_slot_plus1 = n % NBPF_PERCPU_SLOTS + 1u;
  return tls_slot_plus1 - 1u;
}

uint32_t nbpf_this_slot(void) {
  uint32_t s = tls_slot_plus1;
  return s ? s - 1u : slot_assign();
}

uint64_t nbpf_h_get_smp_processor_id(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
  (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  return nbpf_this_slot();
}

uint64_t nbpf_h_ktime_get_ns(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
  (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Seeds a thread's generator from the clock, the thread's stack address and
 * a process-wide counter, scrambled so that threads start far apart. */
static uint64_t rand_seed(void) {
  static uint64_t counter; /* atomic */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)&ts;
  x += __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  return x ? x : 1;
}

uint64_t nbpf_h_get_prandom_u32(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
  (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  uint64_t x = tls_rand;
  if (x == 0) x = rand_seed();
  /* Marsaglia's xorshift64 with the (13, 7, 17) shift triple. */
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  tls_rand = x;
  return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}

/* ---- map helpers ---- */

static inline uint8_t *array_slot_base(struct nbpf_map *m) {
  if (m->type == NBPF_MAP_ARRAY) return m->values;
  return m->values + (size_t)nbpf_this_slot() * m->slot_bytes;
}

uint64_t nbpf_h_map_lookup_elem(uint64_t map, uint64_t key, uint64_t a3, uint64_t a4, uint64_t a5) {
  (void)a3, (void)a4, (void)a5;
  struct nbpf_map *m = (struct nbpf_map *)(uintptr_t)map;
  switch (m->type) {
  case NBPF_MAP_ARRAY:
  case NBPF_MAP_PERCPU_ARRAY: {
    uint32_t idx = *(const uint32_t *)(uintptr_t)key;
    if (idx >= m->max_entries) return 0;
    return (uint64_t)(uintptr_t)(array_slot_base(m) + (size_t)idx * m->stride);
  }
  case NBPF_MAP_HASH:
  case NBPF_MAP_LRU_HASH:
    return (uint64_t)(uintptr_t)nbpf_htab_lookup(m, (const void *)(uintptr_t)key, 1);
  default:
    return 0;
  }
}

uint64_t nbpf_h_map_update_elem(uint64_t map, uint64_t key, uint64_t value, uint64_t flags, uint64_t a5) {
  (void)a5;
  struct nbpf_map *m = (struct nbpf_map *)(uintptr_t)map;
  if (m->flags & NBPF_F_RDONLY_PROG) return (uint64_t)-EPERM;
  if (flags > NBPF_EXIST) return (uint64_t)-EINVAL;
  const void *v = (const void *)(uintptr_t)value;
  switch (m->type) {
  case NBPF_MAP_ARRAY:
  case NBPF_MAP_PERCPU_ARRAY: {
    uint32_t idx = *(const uint32_t *)(uintptr_t)key;
    if (idx >= m->max_entries) return (uint64_t)-E2BIG;
    if (flags == NBPF_NOEXIST) return (uint64_t)-EEXIST;
    nbpf_copy(array_slot_base(m) + (size_t)idx * m->stride, v, m->value_size);
    return 0;
  }
  case NBPF_MAP_HASH:
  case NBPF_MAP_LRU_HASH:
    return (uint64_t)(int64_t)nbpf_htab_update(m, (const void *)(uintptr_t)key, v, flags);
  default:
    return (uint64_t)-EINVAL;
  }
}

uint64_t nbpf_h_map_delete_elem(uint64_t map, uint64_t key, uint64_t a3, uint64_t a4, uint64_t a5) {
  (void)a3, (void)a4, (void)a5;
  struct nbpf_map *m = (struct nbpf_map *)(uintptr_t)map;
  if (m->flags & NBPF_F_RDONLY_PROG) return (uint64_t)-EPERM;
  if (m->type == NBPF_MAP_HASH || m->type == NBPF_MAP_LRU_HASH)
    return (uint64_t)(int64_t)nbpf_htab_delete(m, (const void *)(uintptr_t)key);
  return (uint64_t)-EINVAL; /* arrays cannot delete, like Linux */
}

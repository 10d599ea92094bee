/*
 * ctest.c: the hammer test (native threads doing mixed map operations
 * through the helper function pointers, with a per-thread model of the
 * expected state) and the C benchmark loops.
 */
#define _GNU_SOURCE
#include "ctest.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

#define P(x) ((uint64_t)(uintptr_t)(x))

struct targ {
  const struct ctest_env *env;
  int t;
  uint64_t deadline;
  struct ctest_thread_result *r;
};

static void fail(struct ctest_thread_result *r, const char *what, uint64_t a, uint64_t b) {
  if (r->errors++ == 0)
    snprintf(r->first_error, sizeof r->first_error, "%s (%llu, %llu)", what,
             (unsigned long long)a, (unsigned long long)b);
}

/* One of this thread's hash keys: an update with a random flag, a delete or
 * a lookup, each checked against the model. */
static void own_hash_op(const struct targ *a, uint64_t *x, unsigned op, uint64_t seq) {
  const struct ctest_env *e = a->env;
  struct ctest_thread_result *r = a->r;
  unsigned k = (unsigned)(rnd(x) % CTEST_KEYS_PER_THREAD);
  uint64_t key = ((uint64_t)(a->t + 1) << 32) | k;
  if (op == 0) {
    uint64_t flags = rnd(x) % 3, val[2] = {seq, ~seq};
    int64_t rc = (int64_t)((ctest_fn)e->update)(e->hash, P(&key), P(val), flags, 0);
    int64_t want = 0;
    if (flags == 1 && r->hash_present[k]) want = -EEXIST;
    if (flags == 2 && !r->hash_present[k]) want = -ENOENT;
    if (rc != want) fail(r, "hash update: result differs from the model", (uint64_t)rc, (uint64_t)want);
    if (rc == 0) r->hash_present[k] = 1, r->hash_value[k] = seq;
  } else if (op == 1) {
    int64_t rc = (int64_t)((ctest_fn)e->del)(e->hash, P(&key), 0, 0, 0);
    int64_t want = r->hash_present[k] ? 0 : -ENOENT;
    if (rc != want) fail(r, "hash delete: result differs from the model", (uint64_t)rc, (uint64_t)want);
    r->hash_present[k] = 0;
  } else {
    uint64_t *v = (uint64_t *)(uintptr_t)((ctest_fn)e->lookup)(e->hash, P(&key), 0, 0, 0);
    if ((v != NULL) != r->hash_present[k]) fail(r, "hash lookup: presence differs from the model", k, v != NULL);
    else if (v && (v[0] != r->hash_value[k] || v[1] != ~r->hash_value[k]))
      fail(r, "hash lookup: value differs from the model", v[0], r->hash_value[k]);
  }
}

static void *hammer_thread(void *arg) {
  const struct targ *a = arg;
  const struct ctest_env *e = a->env;
  struct ctest_thread_result *r = a->r;
  ctest_fn lookup = (ctest_fn)e->lookup, update = (ctest_fn)e->update;
  uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(a->t + 1), seq = 1, ring_seq = 0;
  for (;; r->ops++) {
    if ((r->ops & 255) == 0 && now_ns() >= a->deadline) break;
    seq++;
    unsigned op = (unsigned)(rnd(&x) % 12);
    if (op == 0) { /* shared array counters */
      uint32_t i = (uint32_t)(rnd(&x) % CTEST_SHARED);
      uint64_t *v = (uint64_t *)(uintptr_t)lookup(e->array, P(&i), 0, 0, 0);
      if (v == NULL) { fail(r, "array lookup of a shared index failed", i, 0); continue; }
      __atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
      r->array_adds[i]++;
    } else if (op == 1) { /* shared hash counters */
      uint32_t i = (uint32_t)(rnd(&x) % CTEST_SHARED);
      uint64_t key = 1000000 + i;
      uint64_t *v = (uint64_t *)(uintptr_t)lookup(e->hash, P(&key), 0, 0, 0);
      if (v == NULL) { fail(r, "hash lookup of a shared key failed", key, 0); continue; }
      __atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
      r->hash_adds[i]++;
    } else if (op == 2) { /* per-CPU counter */
      uint32_t i = 0;
      uint64_t *v = (uint64_t *)(uintptr_t)lookup(e->percpu, P(&i), 0, 0, 0);
      if (v == NULL) { fail(r, "per-CPU lookup failed", 0, 0); continue; }
      __atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
      r->percpu_adds++;
    } else if (op <= 6) {
      own_hash_op(a, &x, op - 3 < 2 ? 0 : op - 4, seq); /* 3,4: update; 5: delete; 6: lookup */
    } else if (op == 7) { /* own array index: update, then check */
      uint32_t k = (uint32_t)(rnd(&x) % CTEST_KEYS_PER_THREAD);
      uint32_t idx = CTEST_SHARED + (uint32_t)a->t * CTEST_KEYS_PER_THREAD + k;
      uint64_t val[2] = {seq, ~seq};
      uint64_t rc = update(e->array, P(&idx), P(val), 0, 0);
      uint64_t *v = (uint64_t *)(uintptr_t)lookup(e->array, P(&idx), 0, 0, 0);
      if (rc != 0 || v == NULL || v[0] != seq || v[1] != ~seq) fail(r, "array update/lookup mismatch", idx, rc);
      r->array_value[k] = seq;
    } else if (op <= 9) { /* LRU: look up or insert keys from a range larger than the map */
      uint64_t key = rnd(&x) % CTEST_LRU_KEYS, val[2] = {key * 7 + 1, key};
      if (lookup(e->lru, P(&key), 0, 0, 0) == 0) {
        uint64_t rc = update(e->lru, P(&key), P(val), 0, 0);
        if (rc != 0) fail(r, "LRU insert failed", key, rc);
      }
    } else if (e->ring) { /* ring buffer: output, reserve+submit or reserve+discard */
      uint64_t rec[2] = {(uint64_t)a->t, ring_seq}, how = rnd(&x) % 3;
      if (how == 0) {
        if (((ctest_fn)e->rb_output)(e->ring, P(rec), sizeof rec, 0, 0) == 0) ring_seq++, r->ring_sent++;
        else r->ring_full++;
        continue;
      }
      uint64_t *p = (uint64_t *)(uintptr_t)((ctest_fn)e->rb_reserve)(e->ring, sizeof rec, 0, 0, 0);
      if (p == NULL) { r->ring_full++; continue; }
      if (how == 1) {
        p[0] = rec[0], p[1] = rec[1];
        ((ctest_fn)e->rb_submit)(P(p), 0, 0, 0, 0);
        ring_seq++, r->ring_sent++;
      } else {
        p[0] = ~0ull, p[1] = ~0ull; /* the consumer must never see this */
        ((ctest_fn)e->rb_discard)(P(p), 0, 0, 0, 0);
        r->ring_discarded++;
      }
    }
  }
  return NULL;
}

int ctest_hammer(const struct ctest_env *env, int threads, uint64_t duration_ms,
                 struct ctest_hammer_result *res) {
  pthread_t th[CTEST_MAX_THREADS];
  struct targ args[CTEST_MAX_THREADS];
  if (threads < 1 || threads > CTEST_MAX_THREADS) return -1;
  memset(res, 0, sizeof *res);
  uint64_t deadline = now_ns() + duration_ms * 1000000ull;
  int started = 0, rc = 0;
  for (; started < threads; started++) {
    args[started] = (struct targ){env, started, deadline, &res->t[started]};
    if (pthread_create(&th[started], NULL, hammer_thread, &args[started]) != 0) {
      rc = -1;
      break;
    }
  }
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  return rc;
}

/* ---- churn: lock-free lookups while elements move between buckets ---- */

struct churn_arg {
  const struct ctest_env *env;
  uintptr_t map;
  const uint64_t *persist, *keys; /* keys: this churner's two keys */
  uint32_t npersist;
  int reader;
  uint64_t deadline, bad, lookups;
};

static void *churn_thread(void *p) {
  struct churn_arg *a = p;
  ctest_fn lookup = (ctest_fn)a->env->lookup, update = (ctest_fn)a->env->update;
  ctest_fn del = (ctest_fn)a->env->del;
  uint64_t x = 0x2545f4914f6cdd1dull ^ (uint64_t)(uintptr_t)a, zero = 0;
  for (uint64_t n = 0;; n++) {
    if ((n & 1023) == 0 && now_ns() >= a->deadline) break;
    if (a->reader) {
      uint64_t k = a->persist[rnd(&x) % a->npersist];
      uint64_t *v = (uint64_t *)(uintptr_t)lookup(a->map, P(&k), 0, 0, 0);
      a->lookups++;
      if (v == NULL || *v != k) a->bad++;
    } else {
      const uint64_t *from = &a->keys[n & 1], *to = &a->keys[(n + 1) & 1];
      if (del(a->map, P(from), 0, 0, 0) != 0 || update(a->map, P(to), P(&zero), 1, 0) != 0) a->bad++;
    }
  }
  return NULL;
}

uint64_t ctest_churn(const struct ctest_env *env, uintptr_t map, const uint64_t *persist,
                     uint32_t npersist, const uint64_t *churn_keys, int churners, int readers,
                     uint64_t duration_ms, uint64_t *lookups) {
  pthread_t th[2 * CTEST_MAX_THREADS];
  struct churn_arg args[2 * CTEST_MAX_THREADS];
  int n = churners + readers, started = 0;
  *lookups = 0;
  if (churners < 0 || readers < 0 || n > 2 * CTEST_MAX_THREADS || npersist == 0) return ~0ull;
  uint64_t deadline = now_ns() + duration_ms * 1000000ull, bad = 0;
  for (; started < n; started++) {
    int reader = started >= churners;
    args[started] = (struct churn_arg){env, map, persist, reader ? NULL : &churn_keys[2 * started],
                                       npersist, reader, deadline, 0, 0};
    if (pthread_create(&th[started], NULL, churn_thread, &args[started]) != 0) break;
  }
  for (int i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    bad += args[i].bad;
    *lookups += args[i].lookups;
  }
  return started == n ? bad : ~0ull;
}

/* ---- benchmarks ---- */

/* A plain array and a simple open-addressing hash table (linear probing,
 * no locks), with the helpers' signature so that every variant pays the
 * same indirect call. */
#define PLAIN_N 1024u
#define PLAIN_CAP 2048u
static uint64_t plain_array[PLAIN_N * 2] __attribute__((aligned(64)));
static struct { uint64_t key, used, value[2]; } plain_hash[PLAIN_CAP];

static uint64_t plain_array_lookup(uint64_t m, uint64_t key, uint64_t a3, uint64_t a4, uint64_t a5) {
  (void)m, (void)a3, (void)a4, (void)a5;
  uint32_t i = *(const uint32_t *)(uintptr_t)key;
  return i < PLAIN_N ? P(&plain_array[i * 2]) : 0;
}
static uint64_t plain_array_update(uint64_t m, uint64_t key, uint64_t val, uint64_t f, uint64_t a5) {
  (void)m, (void)f, (void)a5;
  uint32_t i = *(const uint32_t *)(uintptr_t)key;
  if (i >= PLAIN_N) return (uint64_t)-E2BIG;
  memcpy(&plain_array[i * 2], (const void *)(uintptr_t)val, 16);
  return 0;
}
static unsigned plain_slot(uint64_t key) {
  return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 53) & (PLAIN_CAP - 1);
}
static uint64_t plain_hash_lookup(uint64_t m, uint64_t key, uint64_t a3, uint64_t a4, uint64_t a5) {
  (void)m, (void)a3, (void)a4, (void)a5;
  uint64_t k = *(const uint64_t *)(uintptr_t)key;
  for (unsigned s = plain_slot(k), n = 0; n < PLAIN_CAP; s = (s + 1) & (PLAIN_CAP - 1), n++) {
    if (!plain_hash[s].used) return 0;
    if (plain_hash[s].key == k) return P(plain_hash[s].value);
  }
  return 0;
}
static uint64_t plain_hash_update(uint64_t m, uint64_t key, uint64_t val, uint64_t f, uint64_t a5) {
  (void)m, (void)f, (void)a5;
  uint64_t k = *(const uint64_t *)(uintptr_t)key;
  for (unsigned s = plain_slot(k), n = 0; n < PLAIN_CAP; s = (s + 1) & (PLAIN_CAP - 1), n++) {
    if (!plain_hash[s].used || plain_hash[s].key == k) {
      plain_hash[s].used = 1, plain_hash[s].key = k;
      memcpy(plain_hash[s].value, (const void *)(uintptr_t)val, 16);
      return 0;
    }
  }
  return (uint64_t)-E2BIG;
}

static uint32_t bench_keys[PLAIN_N];

/* ns per call of fn(map, &key[i % 1024], value, 0, 0), summing what
 * lookups return so the loop has a data dependency. */
static double run(ctest_fn fn, uint64_t map, int u64keys, int deref, uint64_t iters) {
  uint64_t keys64[PLAIN_N], val[2] = {1, 2}, sink = 0;
  for (unsigned i = 0; i < PLAIN_N; i++) keys64[i] = bench_keys[i];
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < iters; i++) {
    uint64_t kp = u64keys ? P(&keys64[i & (PLAIN_N - 1)]) : P(&bench_keys[i & (PLAIN_N - 1)]);
    uint64_t r = fn(map, kp, P(val), 0, 0);
    sink += deref && r ? *(uint64_t *)(uintptr_t)r : r;
  }
  uint64_t t1 = now_ns();
  __asm__ volatile("" : : "r"(sink) : "memory");
  return (double)(t1 - t0) / (double)iters;
}

/* The array lookup a JIT could inline: bounds check and address arithmetic. */
static double run_inline(uint64_t iters) {
  uint64_t sink = 0, t0 = now_ns();
  for (uint64_t i = 0; i < iters; i++) {
    uint32_t k = bench_keys[i & (PLAIN_N - 1)];
    __asm__ volatile("" : "+r"(k)); /* keep the bounds check */
    if (k < PLAIN_N) sink += plain_array[k * 2];
  }
  uint64_t t1 = now_ns();
  __asm__ volatile("" : : "r"(sink) : "memory");
  return (double)(t1 - t0) / (double)iters;
}

void ctest_bench(const struct ctest_env *e, uint64_t iters, double ns[CB_COUNT]) {
  for (unsigned i = 0; i < PLAIN_N; i++) bench_keys[i] = (i * 7919u) % PLAIN_N;
  uint64_t v[2] = {3, 4};
  for (uint64_t k = 0; k < PLAIN_N; k++) {
    uint32_t k32 = (uint32_t)k;
    ((ctest_fn)e->update)(e->hash, P(&k), P(v), 0, 0);
    ((ctest_fn)e->update)(e->lru, P(&k), P(v), 0, 0);
    ((ctest_fn)e->update)(e->array, P(&k32), P(v), 0, 0);
    plain_hash_update(0, P(&k), P(v), 0, 0);
  }
  /* volatile: the compiler must not see through the indirect calls */
  ctest_fn volatile pal = plain_array_lookup, pau = plain_array_update;
  ctest_fn volatile phl = plain_hash_lookup, phu = plain_hash_update;
  ctest_fn lookup = (ctest_fn)e->lookup, update = (ctest_fn)e->update;
  run(lookup, e->array, 0, 1, iters / 4); /* warm up */
  ns[CB_ARRAY_LOOKUP_HELPER] = run(lookup, e->array, 0, 1, iters);
  ns[CB_ARRAY_LOOKUP_PLAIN] = run(pal, 0, 0, 1, iters);
  ns[CB_ARRAY_LOOKUP_INLINE] = run_inline(iters);
  ns[CB_ARRAY_UPDATE_HELPER] = run(update, e->array, 0, 0, iters);
  ns[CB_ARRAY_UPDATE_PLAIN] = run(pau, 0, 0, 0, iters);
  ns[CB_HASH_LOOKUP_HELPER] = run(lookup, e->hash, 1, 1, iters);
  ns[CB_HASH_LOOKUP_PLAIN] = run(phl, 0, 1, 1, iters);
  ns[CB_HASH_UPDATE_HELPER] = run(update, e->hash, 1, 0, iters);
  ns[CB_HASH_UPDATE_PLAIN] = run(phu, 0, 1, 0, iters);
  ns[CB_LRU_LOOKUP_HELPER] = run(lookup, e->lru, 1, 1, iters);
  ns[CB_PERCPU_LOOKUP_HELPER] = run(lookup, e->percpu, 0, 1, iters);
}

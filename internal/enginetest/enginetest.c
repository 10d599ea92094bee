/*
 * enginetest.c: see enginetest.h.
 */
#include "enginetest.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t et_loop(uintptr_t fn, uint64_t n, uint64_t mask, uint64_t flags) {
  et_fn f = (et_fn)fn;
  struct et_ctx ctx = {0, 0, flags, 0};
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    ctx.key = i & mask;
    ctx.val = i;
    acc += f(&ctx);
  }
  return acc;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t et_timed_loop(uintptr_t fn, uint64_t n, uint64_t mask, uint64_t flags, uint64_t *sum) {
  uint64_t t0 = thread_cpu_ns();
  *sum = et_loop(fn, n, mask, flags);
  return thread_cpu_ns() - t0;
}

/* ---- plain C array ---- */

struct et_value {
  uint64_t v[2];
};

static struct et_value *c_array;
static uint32_t c_array_n;

/* ---- plain C hash table: chained, power-of-two buckets, elements
 * preallocated in one block and linked by index (0 = end). ---- */

struct et_elem {
  uint64_t key;
  uint32_t next; /* index + 1 of the next element in the bucket */
  uint32_t pad;
  struct et_value val;
};

static struct {
  uint32_t *heads; /* index + 1 of the first element, per bucket */
  struct et_elem *elems;
  uint32_t mask, used, cap;
} c_hash;

static inline uint32_t c_hash_of(uint64_t k) {
  /* a 64-bit mix (multiply, xor-shift), folded to 32 bits */
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 29;
  return (uint32_t)k;
}

static inline struct et_elem *c_hash_find(uint64_t key) {
  for (uint32_t i = c_hash.heads[c_hash_of(key) & c_hash.mask]; i != 0; i = c_hash.elems[i - 1].next)
    if (c_hash.elems[i - 1].key == key) return &c_hash.elems[i - 1];
  return NULL;
}

static inline int64_t c_hash_update(uint64_t key, const struct et_value *v, uint64_t flags) {
  if (flags > 2) return -EINVAL;
  struct et_elem *e = c_hash_find(key);
  if (e != NULL) {
    if (flags == 1) return -EEXIST;
    e->val = *v;
    return 0;
  }
  if (flags == 2) return -ENOENT;
  if (c_hash.used == c_hash.cap) return -E2BIG;
  uint32_t b = c_hash_of(key) & c_hash.mask;
  e = &c_hash.elems[c_hash.used++];
  e->key = key;
  e->val = *v;
  e->next = c_hash.heads[b];
  c_hash.heads[b] = c_hash.used;
  return 0;
}

int et_c_setup(uint32_t entries) {
  free(c_array);
  free(c_hash.heads);
  free(c_hash.elems);
  c_array = calloc(entries, sizeof *c_array);
  c_array_n = entries;
  c_hash.heads = calloc(entries, sizeof *c_hash.heads);
  c_hash.elems = calloc(entries, sizeof *c_hash.elems);
  c_hash.mask = entries - 1;
  c_hash.used = 0;
  c_hash.cap = entries;
  if (c_array == NULL || c_hash.heads == NULL || c_hash.elems == NULL) return -ENOMEM;
  for (uint32_t k = 0; k < entries; k++) {
    struct et_value v = {{k, 0}};
    c_array[k] = v;
    c_hash_update(k, &v, 0);
  }
  return 0;
}

int et_c_hash_get(uint64_t key, uint64_t *v0) {
  struct et_elem *e = c_hash_find(key);
  if (e == NULL) return 0;
  *v0 = e->val.v[0];
  return 1;
}

/* The operations, each a function called through a pointer like a
 * program's entry. */

static uint64_t c_empty(void *p) { return ((struct et_ctx *)p)->key; }

static uint64_t c_array_lookup(void *p) {
  struct et_ctx *c = p;
  uint32_t k = (uint32_t)c->key;
  if (k >= c_array_n) return 0;
  return c_array[k].v[0];
}

static uint64_t c_array_update(void *p) {
  struct et_ctx *c = p;
  uint32_t k = (uint32_t)c->key;
  if (c->flags > 2) return (uint64_t)-EINVAL;
  if (k >= c_array_n) return (uint64_t)-E2BIG;
  if (c->flags == 1) return (uint64_t)-EEXIST;
  uint64_t key = c->key, val = c->val;
  __asm__("" : "+r"(key), "+r"(val)); /* see c_hash_update_op */
  struct et_value v = {{val, key}};
  c_array[k] = v;
  return 0;
}

static uint64_t c_hash_lookup_op(void *p) {
  struct et_elem *e = c_hash_find(((struct et_ctx *)p)->key);
  return e ? e->val.v[0] : 0;
}

/* The two context words are read with two 8-byte loads, as the programs
 * do: without the empty asm, the compiler may read them with one 16-byte
 * load that cannot be forwarded from the loop's two 8-byte stores (a
 * store-forwarding stall that has nothing to do with the table). */
static uint64_t c_hash_update_op(void *p) {
  struct et_ctx *c = p;
  uint64_t key = c->key, val = c->val;
  __asm__("" : "+r"(key), "+r"(val));
  struct et_value v = {{val, key}};
  return (uint64_t)c_hash_update(key, &v, c->flags);
}

uintptr_t et_c_fn(int which) {
  switch (which) {
  case ET_C_EMPTY: return (uintptr_t)c_empty;
  case ET_C_ARRAY_LOOKUP: return (uintptr_t)c_array_lookup;
  case ET_C_ARRAY_UPDATE: return (uintptr_t)c_array_update;
  case ET_C_HASH_LOOKUP: return (uintptr_t)c_hash_lookup_op;
  case ET_C_HASH_UPDATE: return (uintptr_t)c_hash_update_op;
  }
  return 0;
}

/* ---- threads ---- */

struct et_thread {
  pthread_t th;
  et_fn f;
  uint64_t iters, index, sum;
};

static void *et_thread_main(void *p) {
  struct et_thread *t = p;
  struct et_ctx ctx = {t->index, 0, 0, 0};
  uint64_t s = 0;
  for (uint64_t i = 0; i < t->iters; i++) {
    ctx.val = i;
    s += t->f(&ctx);
  }
  t->sum = s;
  return NULL;
}

int et_threads(uintptr_t fn, int threads, uint64_t iters, uint64_t *sum) {
  struct et_thread t[64];
  if (threads < 1 || threads > 64) return -1;
  int started = 0, rc = 0;
  for (; started < threads; started++) {
    t[started] = (struct et_thread){.f = (et_fn)fn, .iters = iters, .index = (uint64_t)started};
    if (pthread_create(&t[started].th, NULL, et_thread_main, &t[started]) != 0) {
      rc = -1;
      break;
    }
  }
  uint64_t s = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(t[i].th, NULL);
    s += t[i].sum;
  }
  *sum = s;
  return rc;
}

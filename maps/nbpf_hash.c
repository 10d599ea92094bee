/*
 * nbpf_hash.c: hash (type 1) and LRU hash (type 9) maps.
 *
 * Layout: a power-of-two array of buckets, each the head of a singly linked
 * chain, and max_entries preallocated elements that are never freed before
 * the map is. Free elements wait in a FIFO, so a deleted element is reused
 * as late as possible.
 *
 * Lookups take no lock. Each bucket has a sequence number that writers bump
 * (under the bucket's spinlock) after unlinking an element; a reader notes
 * the sequence, walks the chain and retries when the sequence changed,
 * because an element it passed through may have been moved to another chain;
 * after 64 such tries it walks the chain once under the bucket's lock, so a
 * lookup is bounded however busy the writers are.
 * Inserts publish a fully written element with a release store of the chain
 * head, so they need no sequence bump. Keys are stored and compared as
 * 64-bit words with relaxed atomics, so a reader racing with the reuse of an
 * element reads stale or new words, never undefined ones, and the sequence
 * check discards the result.
 *
 * Guarantee (as Linux's preallocated hash maps): a value pointer returned by
 * lookup always points to valid memory of this map until the map is freed.
 * If the key is deleted meanwhile, the element may later hold another key.
 * Updates of an existing key copy the value in place, so value pointers stay
 * attached to their key and atomic operations on them are never lost;
 * concurrent readers of a multi-word value may see a mix of old and new words.
 *
 * LRU: every element carries a stamp from a per-map clock. A lookup or update
 * restamps the element unless it is already the most recent one (see
 * lru_touch for how concurrent touches are ordered). When an
 * insert finds no free element, the element with the smallest stamp among
 * NBPF_LRU_SCAN consecutive elements (all of them in smaller maps, so the
 * order is exact there) is evicted. Concurrent evictors claim victims with a
 * compare-and-swap first, so they pick different ones instead of fighting
 * over the same element.
 */
#include <stdlib.h>
#include <time.h>

#include "nbpf_internal.h"

#define NBPF_LRU_SCAN 256u

struct htab_elem {
  struct htab_elem *next; /* atomic */
  uint64_t stamp;         /* atomic; LRU clock value of the last use */
  uint32_t hash;          /* atomic; low 32 bits of the key's hash */
  uint32_t in_use;        /* atomic; 1 while linked, 2 when claimed for eviction */
  uint64_t key[];         /* key words (zero padded), then the value */
};

struct htab_bucket {
  struct htab_elem *head; /* atomic */
  uint32_t seq;           /* atomic; bumped by 2 after each unlink */
  uint32_t lock;
};

struct nbpf_htab {
  struct htab_bucket *buckets;
  uint64_t mask;
  uint8_t *elems;
  size_t elem_size;
  uint32_t key_words;
  uint64_t seed;
  size_t mem_bytes; /* one mmap for buckets, elements and the free FIFO */
  /* Free element FIFO, guarded by free_lock. */
  uint32_t *free_ring;
  uint32_t free_head, free_count, free_lock;
  /* LRU */
  uint64_t clock;       /* atomic */
  uint32_t evict_next;  /* atomic; start of the next eviction scan */
};

static inline struct htab_elem *elem_at(struct nbpf_htab *h, uint32_t i) {
  return (struct htab_elem *)(h->elems + (size_t)i * h->elem_size);
}
static inline uint8_t *elem_value(struct nbpf_htab *h, struct htab_elem *e) {
  return (uint8_t *)(e->key + h->key_words);
}

/* Hash of the padded key words: multiply-rotate rounds, then a final mix
 * so that the low bits (the bucket index) depend on every input bit. */
static inline uint32_t key_hash(const struct nbpf_htab *h, const uint64_t *kw) {
  const uint64_t k1 = 0x9e3779b97f4a7c15ull, k2 = 0xd6e8feb86659fd93ull;
  uint64_t x = h->seed ^ ((uint64_t)h->key_words * k2);
  if (h->key_words == 1) { /* keys of up to 8 bytes: no loop */
    x ^= kw[0];
    x *= k1;
    x = (x << 29) | (x >> 35);
  } else {
    for (uint32_t i = 0; i < h->key_words; i++) {
      x ^= kw[i];
      x *= k1;
      x = (x << 29) | (x >> 35);
    }
  }
  x ^= x >> 31;
  x *= k2;
  return (uint32_t)(x ^ (x >> 29));
}

/* Copies key_size bytes of key into zero-padded words. */
static inline void load_key(const struct nbpf_map *m, const void *key, uint64_t *kw) {
  if (m->key_size == 8) {
    memcpy(kw, key, 8);
  } else if (m->key_size == 4) {
    uint32_t k;
    memcpy(&k, key, 4);
    kw[0] = k;
  } else {
    kw[m->htab->key_words - 1] = 0;
    memcpy(kw, key, m->key_size);
  }
}

static inline int key_equal(const struct nbpf_htab *h, const struct htab_elem *e, const uint64_t *kw) {
  for (uint32_t i = 0; i < h->key_words; i++)
    if (LOAD_RLX(&e->key[i]) != kw[i]) return 0;
  return 1;
}

/* Whether e holds the key kw with hash hv (keys of one word are compared
 * directly, which is as cheap as comparing hashes). */
static inline int elem_matches(const struct nbpf_htab *h, const struct htab_elem *e,
                               const uint64_t *kw, uint32_t hv) {
  if (h->key_words == 1) return LOAD_RLX(&e->key[0]) == kw[0];
  return LOAD_RLX(&e->hash) == hv && key_equal(h, e, kw);
}

/* Lock-free chain walk; see the file comment. */
static struct htab_elem *find_locked(struct nbpf_htab *h, struct htab_bucket *b,
                                     const uint64_t *kw, uint32_t hv,
                                     struct htab_elem ***link_out);

/* Lockless tries before a lookup walks the chain under the bucket's lock:
 * writers that keep changing one bucket (another thread deleting and
 * inserting there without pause) cannot hold a lookup on NCCL's thread for
 * longer than this many walks and one locked walk. Settable for tests. */
static uint32_t nbpf_lockless_tries = 64;

void nbpf_htab_set_lockless_tries(uint32_t n) { nbpf_lockless_tries = n; }
uint32_t nbpf_htab_get_lockless_tries(void) { return nbpf_lockless_tries; }

static struct htab_elem *find_lockless(struct nbpf_map *m, const uint64_t *kw, uint32_t hv) {
  struct nbpf_htab *h = m->htab;
  struct htab_bucket *b = &h->buckets[hv & h->mask];
  for (uint32_t tries = 0; tries < nbpf_lockless_tries; tries++) {
    uint32_t s0 = LOAD_ACQ(&b->seq);
    struct htab_elem *e = LOAD_ACQ(&b->head), *found = NULL;
    uint32_t steps = 0;
    while (e != NULL && steps++ <= m->max_entries) {
      if (elem_matches(h, e, kw, hv)) {
        found = e;
        break;
      }
      e = LOAD_ACQ(&e->next);
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (LOAD_RLX(&b->seq) == s0 && steps <= m->max_entries) return found;
    nbpf_cpu_relax();
  }
  /* The chain kept changing: walk it once under the lock. The element
   * stays valid after the unlock (elements are never freed before the map). */
  nbpf_spin_lock(&b->lock);
  struct htab_elem *e = find_locked(h, b, kw, hv, NULL);
  nbpf_spin_unlock(&b->lock);
  return e;
}

/* Chain walk under the bucket lock; returns the link that points to the
 * element in *link_out. */
static struct htab_elem *find_locked(struct nbpf_htab *h, struct htab_bucket *b,
                                     const uint64_t *kw, uint32_t hv,
                                     struct htab_elem ***link_out) {
  struct htab_elem **link = &b->head;
  for (struct htab_elem *e = *link; e != NULL; link = &e->next, e = *link) {
    if (elem_matches(h, e, kw, hv)) {
      if (link_out) *link_out = link;
      return e;
    }
  }
  return NULL;
}

/* Marks e as the most recently used element. The clock is advanced with a
 * plain load and store, not a locked instruction: threads touching elements
 * at the same instant may give them equal stamps, which only makes their
 * relative order arbitrary. */
static void lru_stamp(struct nbpf_htab *h, struct htab_elem *e) {
  uint64_t now = LOAD_RLX(&h->clock) + 1;
  STORE_RLX(&h->clock, now);
  STORE_RLX(&e->stamp, now);
}
static void lru_touch(struct nbpf_htab *h, struct htab_elem *e) {
  if (LOAD_RLX(&e->stamp) != LOAD_RLX(&h->clock)) lru_stamp(h, e);
}

static struct htab_elem *free_pop(struct nbpf_htab *h, uint32_t cap) {
  struct htab_elem *e = NULL;
  nbpf_spin_lock(&h->free_lock);
  if (h->free_count > 0) {
    e = elem_at(h, h->free_ring[h->free_head]);
    h->free_head = (h->free_head + 1) % cap;
    h->free_count--;
  }
  nbpf_spin_unlock(&h->free_lock);
  return e;
}

static void free_push(struct nbpf_htab *h, uint32_t cap, struct htab_elem *e) {
  uint32_t idx = (uint32_t)(((uint8_t *)e - h->elems) / h->elem_size);
  nbpf_spin_lock(&h->free_lock);
  h->free_ring[(h->free_head + h->free_count) % cap] = idx;
  h->free_count++;
  nbpf_spin_unlock(&h->free_lock);
}

int nbpf_htab_init(struct nbpf_map *m) {
  if (m->key_size == 0 || m->key_size > NBPF_MAX_KEY_SIZE || m->value_size == 0 ||
      m->value_size > NBPF_MAX_VALUE_SIZE || m->max_entries > (1u << 30))
    return -EINVAL;
  struct nbpf_htab *h = calloc(1, sizeof *h);
  if (h == NULL) return -ENOMEM;
  m->htab = h;
  uint64_t nb = 1;
  while (nb < m->max_entries) nb <<= 1;
  h->mask = nb - 1;
  h->key_words = (m->key_size + 7u) / 8u;
  h->elem_size = sizeof(struct htab_elem) + (size_t)h->key_words * 8u + m->stride;
  size_t bucket_bytes = nb * sizeof(struct htab_bucket);
  size_t elem_bytes = (size_t)m->max_entries * h->elem_size;
  h->mem_bytes = bucket_bytes + elem_bytes + (size_t)m->max_entries * 4u;
  uint8_t *mem = nbpf_mem_alloc(h->mem_bytes);
  if (mem == NULL) return -ENOMEM;
  h->buckets = (struct htab_bucket *)mem;
  h->elems = mem + bucket_bytes;
  h->free_ring = (uint32_t *)(h->elems + elem_bytes);
  for (uint32_t i = 0; i < m->max_entries; i++) h->free_ring[i] = i;
  h->free_count = m->max_entries;
  if (!(m->flags & NBPF_F_ZERO_SEED)) {
    /* Address and time: enough to make bucket collisions unpredictable. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    h->seed = (uint64_t)(uintptr_t)h * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_nsec ^
              ((uint64_t)ts.tv_sec << 32);
  }
  return 0;
}

void nbpf_htab_free(struct nbpf_map *m) {
  nbpf_mem_free(m->htab->buckets, m->htab->mem_bytes);
  free(m->htab);
  m->htab = NULL;
}

void *nbpf_htab_lookup(struct nbpf_map *m, const void *key, int touch) {
  struct nbpf_htab *h = m->htab;
  uint64_t kw[NBPF_MAX_KEY_SIZE / 8];
  load_key(m, key, kw);
  struct htab_elem *e = find_lockless(m, kw, key_hash(h, kw));
  if (e == NULL) return NULL;
  if (touch && m->type == NBPF_MAP_LRU_HASH) lru_touch(h, e);
  return elem_value(h, e);
}

/* Unlinks e (found through link) from b; caller holds b's lock. */
static void unlink_locked(struct htab_bucket *b, struct htab_elem **link, struct htab_elem *e) {
  STORE_REL(link, LOAD_RLX(&e->next));
  STORE_RLX(&e->in_use, 0u);
  STORE_REL(&b->seq, b->seq + 2u);
}

/* Picks the least recently used element among the next NBPF_LRU_SCAN ones
 * that no other evicting thread has claimed, and claims it (in_use 1 -> 2),
 * so that concurrent evictions pick different victims. NULL if none. */
static struct htab_elem *lru_claim(struct nbpf_map *m) {
  struct nbpf_htab *h = m->htab;
  uint32_t n = m->max_entries, window = n < NBPF_LRU_SCAN ? n : NBPF_LRU_SCAN;
  uint32_t start = window == n ? 0 : __atomic_fetch_add(&h->evict_next, window, __ATOMIC_RELAXED) % n;
  for (;;) {
    struct htab_elem *victim = NULL;
    uint64_t best = UINT64_MAX;
    for (uint32_t i = 0; i < window; i++) {
      struct htab_elem *e = elem_at(h, (start + i) % n);
      uint64_t st = LOAD_RLX(&e->stamp);
      if (LOAD_RLX(&e->in_use) == 1u && st < best) {
        best = st;
        victim = e;
      }
    }
    if (victim == NULL) return NULL;
    uint32_t one = 1u;
    if (__atomic_compare_exchange_n(&victim->in_use, &one, 2u, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return victim;
  }
}

/* Returns an unlinked element for an insert into a full LRU map: a free
 * one if another thread freed one meanwhile, else the evicted LRU victim.
 * NULL only if more threads than elements keep evicting at once. */
static struct htab_elem *lru_get_elem(struct nbpf_map *m) {
  struct nbpf_htab *h = m->htab;
  for (unsigned round = 0; round < 4096; round++) {
    struct htab_elem *victim = free_pop(h, m->max_entries);
    if (victim != NULL) return victim;
    victim = lru_claim(m);
    if (victim == NULL) {
      sched_yield();
      continue;
    }
    /* The chain under the bucket lock is the authority: the victim may have
     * been deleted (and even reused) since it was claimed. */
    struct htab_bucket *b = &h->buckets[LOAD_RLX(&victim->hash) & h->mask];
    nbpf_spin_lock(&b->lock);
    struct htab_elem **link = &b->head;
    for (struct htab_elem *e = *link; e != NULL; link = &e->next, e = *link) {
      if (e == victim) {
        unlink_locked(b, link, e);
        nbpf_spin_unlock(&b->lock);
        return e;
      }
    }
    nbpf_spin_unlock(&b->lock);
  }
  return NULL;
}

int nbpf_htab_update(struct nbpf_map *m, const void *key, const void *value, uint64_t flags) {
  struct nbpf_htab *h = m->htab;
  if (flags > NBPF_EXIST) return -EINVAL;
  uint64_t kw[NBPF_MAX_KEY_SIZE / 8];
  load_key(m, key, kw);
  uint32_t hv = key_hash(h, kw);
  struct htab_bucket *b = &h->buckets[hv & h->mask];
  struct htab_elem *spare = NULL;
  int err = 0;
  for (;;) {
    nbpf_spin_lock(&b->lock);
    struct htab_elem *e = find_locked(h, b, kw, hv, NULL);
    if (e != NULL) {
      if (flags == NBPF_NOEXIST) {
        err = -EEXIST;
      } else {
        nbpf_copy(elem_value(h, e), value, m->value_size);
        if (m->type == NBPF_MAP_LRU_HASH) lru_touch(h, e);
      }
      break;
    }
    if (flags == NBPF_EXIST) {
      err = -ENOENT;
      break;
    }
    if (spare == NULL) spare = free_pop(h, m->max_entries);
    if (spare != NULL) {
      /* Fill, then publish with release stores (see the file comment). */
      __atomic_thread_fence(__ATOMIC_RELEASE);
      for (uint32_t i = 0; i < h->key_words; i++) STORE_RLX(&spare->key[i], kw[i]);
      STORE_RLX(&spare->hash, hv);
      nbpf_copy(elem_value(h, spare), value, m->value_size);
      if (m->type == NBPF_MAP_LRU_HASH) lru_stamp(h, spare);
      STORE_RLX(&spare->in_use, 1u);
      STORE_REL(&spare->next, b->head);
      STORE_REL(&b->head, spare);
      spare = NULL;
      break;
    }
    nbpf_spin_unlock(&b->lock);
    if (m->type != NBPF_MAP_LRU_HASH) return -E2BIG;
    spare = lru_get_elem(m);
    if (spare == NULL) return -E2BIG; /* more evicting threads than elements */
  }
  nbpf_spin_unlock(&b->lock);
  if (spare != NULL) free_push(h, m->max_entries, spare);
  return err;
}

int nbpf_htab_delete(struct nbpf_map *m, const void *key) {
  struct nbpf_htab *h = m->htab;
  uint64_t kw[NBPF_MAX_KEY_SIZE / 8];
  load_key(m, key, kw);
  uint32_t hv = key_hash(h, kw);
  struct htab_bucket *b = &h->buckets[hv & h->mask];
  struct htab_elem **link;
  nbpf_spin_lock(&b->lock);
  struct htab_elem *e = find_locked(h, b, kw, hv, &link);
  if (e != NULL) unlink_locked(b, link, e);
  nbpf_spin_unlock(&b->lock);
  if (e == NULL) return -ENOENT;
  free_push(h, m->max_entries, e);
  return 0;
}

int64_t nbpf_map_bucket_of(struct nbpf_map *m, const void *key) {
  if (m->htab == NULL) return -EINVAL;
  uint64_t kw[NBPF_MAX_KEY_SIZE / 8];
  load_key(m, key, kw);
  return (int64_t)(key_hash(m->htab, kw) & m->htab->mask);
}

int nbpf_htab_next_key(struct nbpf_map *m, const void *key, void *next) {
  struct nbpf_htab *h = m->htab;
  uint64_t i = 0;
  if (key != NULL) {
    uint64_t kw[NBPF_MAX_KEY_SIZE / 8];
    load_key(m, key, kw);
    uint32_t hv = key_hash(h, kw);
    struct htab_bucket *b = &h->buckets[hv & h->mask];
    nbpf_spin_lock(&b->lock);
    struct htab_elem *e = find_locked(h, b, kw, hv, NULL);
    if (e != NULL && e->next != NULL) {
      memcpy(next, e->next->key, m->key_size);
      nbpf_spin_unlock(&b->lock);
      return 0;
    }
    nbpf_spin_unlock(&b->lock);
    if (e != NULL) i = (hv & h->mask) + 1;
  }
  for (; i <= h->mask; i++) {
    struct htab_bucket *b = &h->buckets[i];
    if (LOAD_ACQ(&b->head) == NULL) continue;
    nbpf_spin_lock(&b->lock);
    struct htab_elem *e = b->head;
    if (e != NULL) memcpy(next, e->key, m->key_size);
    nbpf_spin_unlock(&b->lock);
    if (e != NULL) return 0;
  }
  return -ENOENT;
}

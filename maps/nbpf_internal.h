/*
 * nbpf_internal.h: structures and small inline tools shared by the C files
 * of package maps. Not part of the public interface (see ncclbpf_maps.h).
 */
#ifndef NBPF_INTERNAL_H
#define NBPF_INTERNAL_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "ncclbpf_maps.h"

#define NBPF_ROUND8(x) (((x) + 7u) & ~(size_t)7u)

/* Relaxed/acquire/release accessors (GCC/Clang builtins). */
#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static inline void nbpf_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* A test-and-test-and-set spinlock that yields the CPU when the holder
 * seems to be descheduled (NCCL runs more threads than cores at times). */
static inline void nbpf_spin_lock(uint32_t *l) {
  unsigned spins = 0;
  while (__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE)) {
    while (LOAD_RLX(l)) {
      if (++spins > 128) {
        sched_yield();
        spins = 0;
      } else {
        nbpf_cpu_relax();
      }
    }
  }
}
static inline void nbpf_spin_unlock(uint32_t *l) { STORE_REL(l, 0u); }

/* Copies n bytes. The common small sizes are spelled out as fixed-size
 * copies (plain moves): a loop would be turned into `rep movs`, whose
 * startup cost and failed store forwarding dominate a map lookup. */
static inline void nbpf_copy(void *dst, const void *src, size_t n) {
  switch (n) {
  case 4: memcpy(dst, src, 4); break;
  case 8: memcpy(dst, src, 8); break;
  case 16: memcpy(dst, src, 16); break;
  case 24: memcpy(dst, src, 24); break;
  case 32: memcpy(dst, src, 32); break;
  default: memcpy(dst, src, n);
  }
}

struct nbpf_htab;    /* nbpf_hash.c */
struct nbpf_ringbuf; /* nbpf_ringbuf.c */

/* The native map object. Its address is the map handle that programs load
 * with LD_IMM64 and pass to the helpers. */
struct nbpf_map {
  uint32_t type, key_size, value_size, max_entries, flags;
  uint32_t stride;   /* value_size rounded up to 8 */
  uint32_t frozen;   /* atomic; control-plane writes refused when set */
  uint32_t pad_;
  /* arrays: values[i * stride]; per-CPU arrays: slot s at
   * values + s * slot_bytes. */
  uint8_t *values;
  size_t slot_bytes;
  size_t values_bytes; /* mmap'ed length of values */
  struct nbpf_htab *htab;
  struct nbpf_ringbuf *rb;
};

/* Memory outside any heap: anonymous, zeroed, page-aligned. */
void *nbpf_mem_alloc(size_t bytes);
void nbpf_mem_free(void *p, size_t bytes);

/* The calling thread's per-CPU slot. */
uint32_t nbpf_this_slot(void);

/* Hash and LRU hash maps (nbpf_hash.c). */
int nbpf_htab_init(struct nbpf_map *m);
void nbpf_htab_free(struct nbpf_map *m);
/* touch: count the lookup as a use for LRU (programs do, the control plane
 * does not, so that dumping a map leaves its LRU order alone). */
void *nbpf_htab_lookup(struct nbpf_map *m, const void *key, int touch);

int nbpf_htab_update(struct nbpf_map *m, const void *key, const void *value, uint64_t flags);
int nbpf_htab_delete(struct nbpf_map *m, const void *key);
int nbpf_htab_next_key(struct nbpf_map *m, const void *key, void *next);

/* Ring buffers (nbpf_ringbuf.c). */
int nbpf_ringbuf_init(struct nbpf_map *m);
void nbpf_ringbuf_free(struct nbpf_map *m);

#endif /* NBPF_INTERNAL_H */

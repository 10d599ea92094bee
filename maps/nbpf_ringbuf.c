/*
 * nbpf_ringbuf.c: ring buffer maps (type 27), many producers (programs on
 * any thread), one consumer (Go or C control plane).
 *
 * The data area (max_entries bytes, a power of two and a multiple of the page
 * size) is mapped twice back to back, so a record that wraps around the end
 * is still contiguous in memory. Each record is an 8-byte header (32-bit
 * length with BUSY and DISCARD bits, 32 bits unused) followed by the data,
 * padded to 8 bytes.
 *
 * Producers serialize only the reservation (a short spinlock section that
 * checks space, writes a BUSY header and advances prod_pos); filling,
 * submitting and discarding happen without a lock. The consumer reads
 * records in order and stops at the first one still BUSY.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nbpf_internal.h"

struct nbpf_ringbuf {
  uint8_t *data; /* 2 * size bytes, the second half aliasing the first */
  uint64_t size;
  uint32_t prod_lock;
  uint64_t prod_pos __attribute__((aligned(64))); /* atomic; producers */
  uint64_t cons_pos __attribute__((aligned(64))); /* atomic; consumer */
};

int nbpf_ringbuf_init(struct nbpf_map *m) {
  uint64_t size = m->max_entries;
  long page = sysconf(_SC_PAGESIZE);
  if (m->key_size != 0 || m->value_size != 0 || (size & (size - 1)) != 0 ||
      page <= 0 || size % (uint64_t)page != 0)
    return -EINVAL;
  struct nbpf_ringbuf *rb = calloc(1, sizeof *rb);
  if (rb == NULL) return -ENOMEM;
  m->rb = rb;
  rb->size = size;
  int fd = memfd_create("ncclbpf-ringbuf", MFD_CLOEXEC);
  if (fd < 0) return -errno;
  int err = 0;
  uint8_t *base = MAP_FAILED;
  if (ftruncate(fd, (off_t)size) != 0) {
    err = -errno;
    goto out;
  }
  /* Reserve 2*size of address space, then map the file into both halves. */
  base = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    err = -ENOMEM;
    goto out;
  }
  for (int half = 0; half < 2; half++) {
    void *p = mmap(base + half * size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
      err = -ENOMEM;
      munmap(base, 2 * size);
      goto out;
    }
  }
  rb->data = base;
out:
  close(fd);
  return err;
}

void nbpf_ringbuf_free(struct nbpf_map *m) {
  if (m->rb->data) munmap(m->rb->data, 2 * m->rb->size);
  free(m->rb);
  m->rb = NULL;
}

/* The header of the record whose data is at p. */
static inline uint32_t *hdr_of(void *p) { return (uint32_t *)((uint8_t *)p - NBPF_RB_HDR_SIZE); }

uint64_t nbpf_h_ringbuf_reserve(uint64_t map, uint64_t size, uint64_t flags, uint64_t u4, uint64_t u5) {
  (void)u4, (void)u5;
  struct nbpf_map *m = (struct nbpf_map *)(uintptr_t)map;
  if (m->type != NBPF_MAP_RINGBUF || flags != 0) return 0;
  struct nbpf_ringbuf *rb = m->rb;
  uint64_t total = NBPF_RB_HDR_SIZE + NBPF_ROUND8(size);
  if (size >= NBPF_RB_DISCARD || total > rb->size) return 0;
  nbpf_spin_lock(&rb->prod_lock);
  uint64_t prod = rb->prod_pos, cons = LOAD_ACQ(&rb->cons_pos);
  if (prod - cons + total > rb->size) {
    nbpf_spin_unlock(&rb->prod_lock);
    return 0;
  }
  uint32_t *hdr = (uint32_t *)(rb->data + (prod & (rb->size - 1)));
  STORE_RLX(&hdr[0], (uint32_t)size | NBPF_RB_BUSY);
  STORE_REL(&rb->prod_pos, prod + total);
  nbpf_spin_unlock(&rb->prod_lock);
  return (uint64_t)(uintptr_t)(hdr + 2);
}

uint64_t nbpf_h_ringbuf_submit(uint64_t data, uint64_t flags, uint64_t u3, uint64_t u4, uint64_t u5) {
  (void)flags, (void)u3, (void)u4, (void)u5; /* wakeup flags mean nothing here */
  uint32_t *hdr = hdr_of((void *)(uintptr_t)data);
  STORE_REL(hdr, LOAD_RLX(hdr) & ~NBPF_RB_BUSY);
  return 0;
}

uint64_t nbpf_h_ringbuf_discard(uint64_t data, uint64_t flags, uint64_t u3, uint64_t u4, uint64_t u5) {
  (void)flags, (void)u3, (void)u4, (void)u5;
  uint32_t *hdr = hdr_of((void *)(uintptr_t)data);
  STORE_REL(hdr, (LOAD_RLX(hdr) & ~NBPF_RB_BUSY) | NBPF_RB_DISCARD);
  return 0;
}

uint64_t nbpf_h_ringbuf_output(uint64_t map, uint64_t data, uint64_t size, uint64_t flags, uint64_t u5) {
  (void)u5;
  if (flags & ~(uint64_t)3) return (uint64_t)-EINVAL; /* only the wakeup flags */
  uint64_t p = nbpf_h_ringbuf_reserve(map, size, 0, 0, 0);
  if (p == 0) return (uint64_t)-EAGAIN;
  memcpy((void *)(uintptr_t)p, (const void *)(uintptr_t)data, size);
  return nbpf_h_ringbuf_submit(p, flags, 0, 0, 0);
}

int nbpf_ringbuf_peek(struct nbpf_map *m, const void **data, uint32_t *len) {
  struct nbpf_ringbuf *rb = m->rb;
  if (rb == NULL) return 0;
  for (;;) {
    uint64_t cons = LOAD_RLX(&rb->cons_pos), prod = LOAD_ACQ(&rb->prod_pos);
    if (cons == prod) return 0;
    uint32_t *hdr = (uint32_t *)(rb->data + (cons & (rb->size - 1)));
    uint32_t h = LOAD_ACQ(hdr);
    if (h & NBPF_RB_BUSY) return 0;
    uint32_t n = h & ~(NBPF_RB_BUSY | NBPF_RB_DISCARD);
    if (h & NBPF_RB_DISCARD) {
      STORE_REL(&rb->cons_pos, cons + NBPF_RB_HDR_SIZE + NBPF_ROUND8(n));
      continue;
    }
    *data = hdr + 2;
    *len = n;
    return 1;
  }
}

void nbpf_ringbuf_consume(struct nbpf_map *m) {
  struct nbpf_ringbuf *rb = m->rb;
  if (rb == NULL) return;
  uint64_t cons = LOAD_RLX(&rb->cons_pos);
  if (cons == LOAD_ACQ(&rb->prod_pos)) return;
  uint32_t h = LOAD_ACQ((uint32_t *)(rb->data + (cons & (rb->size - 1))));
  if (h & NBPF_RB_BUSY) return;
  uint32_t n = h & ~(NBPF_RB_BUSY | NBPF_RB_DISCARD);
  STORE_REL(&rb->cons_pos, cons + NBPF_RB_HDR_SIZE + NBPF_ROUND8(n));
}

uint64_t nbpf_ringbuf_pending(struct nbpf_map *m) {
  if (m->rb == NULL) return 0;
  return LOAD_ACQ(&m->rb->prod_pos) - LOAD_ACQ(&m->rb->cons_pos);
}

/*
 * nbpf_map.c: map creation and destruction, array and per-CPU array maps,
 * and the control-plane entry points (dispatch on the map type).
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "nbpf_internal.h"

void *nbpf_mem_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void nbpf_mem_free(void *p, size_t bytes) {
  if (p != NULL) munmap(p, bytes);
}

static int is_array(const struct nbpf_map *m) {
  return m->type == NBPF_MAP_ARRAY || m->type == NBPF_MAP_PERCPU_ARRAY;
}

static int is_hash(const struct nbpf_map *m) {
  return m->type == NBPF_MAP_HASH || m->type == NBPF_MAP_LRU_HASH;
}

/* Flags each type accepts. */
static uint32_t allowed_flags(uint32_t type) {
  const uint32_t common = NBPF_F_RDONLY | NBPF_F_WRONLY | NBPF_F_RDONLY_PROG | NBPF_F_WRONLY_PROG;
  switch (type) {
  case NBPF_MAP_ARRAY: return common | NBPF_F_MMAPABLE;
  case NBPF_MAP_PERCPU_ARRAY: return common;
  case NBPF_MAP_HASH: return common | NBPF_F_NO_PREALLOC | NBPF_F_ZERO_SEED;
  case NBPF_MAP_LRU_HASH: return common | NBPF_F_NO_COMMON_LRU | NBPF_F_ZERO_SEED;
  default: return 0; /* ring buffers take no flags */
  }
}

static int array_init(struct nbpf_map *m) {
  if (m->key_size != 4 || m->value_size == 0 || m->value_size > NBPF_MAX_VALUE_SIZE)
    return -EINVAL;
  size_t bytes = (size_t)m->max_entries * m->stride;
  size_t slots = 1;
  if (m->type == NBPF_MAP_PERCPU_ARRAY) {
    /* Each slot's values start on their own cache line. */
    bytes = (bytes + 63u) & ~(size_t)63u;
    slots = NBPF_PERCPU_SLOTS;
  }
  m->slot_bytes = bytes;
  m->values_bytes = bytes * slots;
  if (m->values_bytes > ((size_t)1 << 40)) return -E2BIG;
  m->values = nbpf_mem_alloc(m->values_bytes);
  return m->values ? 0 : -ENOMEM;
}

int nbpf_map_create(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t max_entries,
                    uint32_t flags, struct nbpf_map **out) {
  *out = NULL;
  if (max_entries == 0 || (flags & ~allowed_flags(type)) != 0) return -EINVAL;
  struct nbpf_map *m = calloc(1, sizeof *m);
  if (m == NULL) return -ENOMEM;
  m->type = type;
  m->key_size = key_size;
  m->value_size = value_size;
  m->max_entries = max_entries;
  m->flags = flags;
  m->stride = (uint32_t)NBPF_ROUND8((size_t)value_size);
  int err;
  switch (type) {
  case NBPF_MAP_ARRAY:
  case NBPF_MAP_PERCPU_ARRAY: err = array_init(m); break;
  case NBPF_MAP_HASH:
  case NBPF_MAP_LRU_HASH: err = nbpf_htab_init(m); break;
  case NBPF_MAP_RINGBUF: err = nbpf_ringbuf_init(m); break;
  default: err = -EINVAL;
  }
  if (err) {
    nbpf_map_free(m);
    return err;
  }
  *out = m;
  return 0;
}

void nbpf_map_free(struct nbpf_map *m) {
  if (m == NULL) return;
  nbpf_mem_free(m->values, m->values_bytes);
  if (m->htab) nbpf_htab_free(m);
  if (m->rb) nbpf_ringbuf_free(m);
  free(m);
}

size_t nbpf_map_value_buf_size(const struct nbpf_map *m) {
  if (m->type == NBPF_MAP_PERCPU_ARRAY) return (size_t)NBPF_PERCPU_SLOTS * m->stride;
  return m->value_size;
}

int nbpf_map_lookup_copy(struct nbpf_map *m, const void *key, void *out) {
  if (is_array(m)) {
    uint32_t idx;
    memcpy(&idx, key, 4);
    if (idx >= m->max_entries) return -ENOENT;
    if (m->type == NBPF_MAP_ARRAY) {
      memcpy(out, m->values + (size_t)idx * m->stride, m->value_size);
      return 0;
    }
    for (uint32_t s = 0; s < NBPF_PERCPU_SLOTS; s++)
      memcpy((uint8_t *)out + (size_t)s * m->stride,
             m->values + s * m->slot_bytes + (size_t)idx * m->stride, m->stride);
    return 0;
  }
  if (is_hash(m)) {
    void *v = nbpf_htab_lookup(m, key, 0);
    if (v == NULL) return -ENOENT;
    memcpy(out, v, m->value_size);
    return 0;
  }
  return -EINVAL;
}

int nbpf_map_update_all(struct nbpf_map *m, const void *key, const void *value, uint64_t flags) {
  if (LOAD_ACQ(&m->frozen) || (m->flags & NBPF_F_RDONLY)) return -EPERM;
  if (flags > NBPF_EXIST) return -EINVAL;
  if (is_array(m)) {
    uint32_t idx;
    memcpy(&idx, key, 4);
    if (idx >= m->max_entries) return -E2BIG;
    if (flags == NBPF_NOEXIST) return -EEXIST;
    if (m->type == NBPF_MAP_ARRAY) {
      memcpy(m->values + (size_t)idx * m->stride, value, m->value_size);
      return 0;
    }
    for (uint32_t s = 0; s < NBPF_PERCPU_SLOTS; s++)
      memcpy(m->values + s * m->slot_bytes + (size_t)idx * m->stride,
             (const uint8_t *)value + (size_t)s * m->stride, m->value_size);
    return 0;
  }
  if (is_hash(m)) return nbpf_htab_update(m, key, value, flags);
  return -EINVAL;
}

int nbpf_map_delete(struct nbpf_map *m, const void *key) {
  if (LOAD_ACQ(&m->frozen) || (m->flags & NBPF_F_RDONLY)) return -EPERM;
  if (is_hash(m)) return nbpf_htab_delete(m, key);
  return -EINVAL;
}

int nbpf_map_next_key(struct nbpf_map *m, const void *key, void *next) {
  if (is_array(m)) {
    uint32_t idx = 0;
    if (key != NULL) {
      memcpy(&idx, key, 4);
      idx = idx >= m->max_entries ? 0 : idx + 1;
    }
    if (idx >= m->max_entries) return -ENOENT;
    memcpy(next, &idx, 4);
    return 0;
  }
  if (is_hash(m)) return nbpf_htab_next_key(m, key, next);
  return -EINVAL;
}

void nbpf_map_freeze(struct nbpf_map *m) { STORE_REL(&m->frozen, 1u); }
int nbpf_map_frozen(const struct nbpf_map *m) { return (int)LOAD_ACQ(&m->frozen); }

void *nbpf_map_array_base(const struct nbpf_map *m) {
  return m->type == NBPF_MAP_ARRAY ? m->values : NULL;
}

uint32_t nbpf_map_value_stride(const struct nbpf_map *m) { return is_array(m) ? m->stride : 0; }

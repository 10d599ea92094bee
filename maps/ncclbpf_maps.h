/*
 * ncclbpf_maps.h: native eBPF maps and helper functions of ncclbpf.
 *
 * This is the public C interface of package maps. It is plain C99 (plus
 * stdint) so that other C code in the repository (the plugin shim, C test
 * hosts) can include it. Everything here lives outside the Go heap: map
 * memory is mmap'ed when a map is created, never moves, and is unmapped only
 * by nbpf_map_free.
 *
 * Threading: the helper functions (nbpf_h_*) may be called from any number of
 * threads at once; none of them takes a lock on a lookup path. Control-plane
 * functions (nbpf_map_*) are safe to call concurrently with helpers, but
 * nbpf_map_free must only be called once no thread can use the map anymore.
 */
#ifndef NCCLBPF_MAPS_H
#define NCCLBPF_MAPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Map types (Linux's enum bpf_map_type numbering). */
#define NBPF_MAP_HASH 1u
#define NBPF_MAP_ARRAY 2u
#define NBPF_MAP_PERCPU_ARRAY 6u
#define NBPF_MAP_LRU_HASH 9u
#define NBPF_MAP_RINGBUF 27u

/* Update flags (BPF_ANY, BPF_NOEXIST, BPF_EXIST). */
#define NBPF_ANY 0u
#define NBPF_NOEXIST 1u
#define NBPF_EXIST 2u

/* Map creation flags (Linux values). Accepted ones only. */
#define NBPF_F_NO_PREALLOC (1u << 0)  /* hash: accepted, elements are always preallocated */
#define NBPF_F_NO_COMMON_LRU (1u << 1) /* LRU: accepted, there is one common LRU */
#define NBPF_F_RDONLY (1u << 3)       /* control plane may not write */
#define NBPF_F_WRONLY (1u << 4)       /* accepted, not enforced on reads */
#define NBPF_F_ZERO_SEED (1u << 6)    /* hash: deterministic hash seed */
#define NBPF_F_RDONLY_PROG (1u << 7)  /* programs may not write (.rodata) */
#define NBPF_F_WRONLY_PROG (1u << 8)  /* accepted, not enforced */
#define NBPF_F_MMAPABLE (1u << 10)    /* array: accepted, arrays are always contiguous */

/* Per-CPU arrays have this many value slots. A thread gets slot
 * (n mod NBPF_PERCPU_SLOTS) on its first use of a helper, where n counts the
 * threads seen so far; threads beyond that count share slots. */
#define NBPF_PERCPU_SLOTS 64u

/* Limits. */
#define NBPF_MAX_KEY_SIZE 512u
#define NBPF_MAX_VALUE_SIZE (1u << 24)

/* Ring buffer record header flags (in the 32-bit length word). */
#define NBPF_RB_BUSY (1u << 31)
#define NBPF_RB_DISCARD (1u << 30)
#define NBPF_RB_HDR_SIZE 8u

struct nbpf_map; /* opaque */

/* ---- control plane (Go, the shim; never called by programs) ---- */

/* nbpf_map_create allocates a zeroed map. Returns 0 and *out, or -errno:
 * -EINVAL for a bad type, size or flag, -ENOMEM when memory is short. */
int nbpf_map_create(uint32_t type, uint32_t key_size, uint32_t value_size,
                    uint32_t max_entries, uint32_t flags, struct nbpf_map **out);
/* nbpf_map_free releases all memory of m. No thread may use m afterwards. */
void nbpf_map_free(struct nbpf_map *m);

/* nbpf_map_value_buf_size returns the number of bytes nbpf_map_lookup_copy
 * writes and nbpf_map_update_all reads: value_size, or for per-CPU arrays
 * NBPF_PERCPU_SLOTS * stride. */
size_t nbpf_map_value_buf_size(const struct nbpf_map *m);
/* nbpf_map_lookup_copy copies the value of key into out. 0 or -ENOENT.
 * It does not count as a use for LRU maps (like Linux's syscall lookups). */
int nbpf_map_lookup_copy(struct nbpf_map *m, const void *key, void *out);
/* nbpf_map_update_all stores value (for per-CPU arrays, one value per slot,
 * each `stride` bytes apart) under key. 0 or -EEXIST, -ENOENT, -E2BIG,
 * -EINVAL, -EPERM (frozen or NBPF_F_RDONLY). */
int nbpf_map_update_all(struct nbpf_map *m, const void *key, const void *value, uint64_t flags);
/* nbpf_map_delete removes key. 0, -ENOENT, or -EINVAL for arrays. */
int nbpf_map_delete(struct nbpf_map *m, const void *key);
/* nbpf_map_next_key writes the key after key (the first key if key is NULL)
 * into next. 0 or -ENOENT at the end. Like Linux, a key that is not in the
 * map restarts the walk; concurrent updates may make it skip or repeat keys. */
int nbpf_map_next_key(struct nbpf_map *m, const void *key, void *next);
/* nbpf_map_bucket_of returns the bucket a key of a hash map falls in, and
 * -EINVAL for other map types (diagnostics: collisions, tests). */
int64_t nbpf_map_bucket_of(struct nbpf_map *m, const void *key);
/* Freezing makes the map read-only for the control plane (programs are
 * governed by NBPF_F_RDONLY_PROG). */
void nbpf_map_freeze(struct nbpf_map *m);
int nbpf_map_frozen(const struct nbpf_map *m);
/* Arrays: the address of value 0 and the distance between values
 * (value_size rounded up to 8). NULL / 0 for other types. */
void *nbpf_map_array_base(const struct nbpf_map *m);

/* nbpf_htab_set_lockless_tries sets how many lockless walks a hash lookup
 * tries before one under the bucket's lock (64; 0: always locked). */
void nbpf_htab_set_lockless_tries(uint32_t n);
uint32_t nbpf_htab_get_lockless_tries(void);
uint32_t nbpf_map_value_stride(const struct nbpf_map *m);

/* Ring buffer consumer side. One consumer at a time. nbpf_ringbuf_peek
 * returns 1 and the oldest submitted record (skipping discarded ones), or 0
 * when there is none yet (empty, or the oldest record is still reserved).
 * The record stays valid until nbpf_ringbuf_consume, which drops it. */
int nbpf_ringbuf_peek(struct nbpf_map *m, const void **data, uint32_t *len);
void nbpf_ringbuf_consume(struct nbpf_map *m);
/* Bytes reserved by producers and not consumed yet. */
uint64_t nbpf_ringbuf_pending(struct nbpf_map *m);

/* ---- helper functions, called by programs (System V ABI) ---- */
typedef uint64_t (*nbpf_helper_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

uint64_t nbpf_h_map_lookup_elem(uint64_t map, uint64_t key, uint64_t, uint64_t, uint64_t);
uint64_t nbpf_h_map_update_elem(uint64_t map, uint64_t key, uint64_t value, uint64_t flags, uint64_t);
uint64_t nbpf_h_map_delete_elem(uint64_t map, uint64_t key, uint64_t, uint64_t, uint64_t);
uint64_t nbpf_h_ktime_get_ns(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
uint64_t nbpf_h_trace_printk(uint64_t fmt, uint64_t fmt_size, uint64_t a1, uint64_t a2, uint64_t a3);
uint64_t nbpf_h_get_prandom_u32(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
uint64_t nbpf_h_get_smp_processor_id(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
uint64_t nbpf_h_ringbuf_output(uint64_t map, uint64_t data, uint64_t size, uint64_t flags, uint64_t);
uint64_t nbpf_h_ringbuf_reserve(uint64_t map, uint64_t size, uint64_t flags, uint64_t, uint64_t);
uint64_t nbpf_h_ringbuf_submit(uint64_t data, uint64_t flags, uint64_t, uint64_t, uint64_t);
uint64_t nbpf_h_ringbuf_discard(uint64_t data, uint64_t flags, uint64_t, uint64_t, uint64_t);

/* ---- bpf_printk output ---- */

/* A log sink receives one formatted line (no trailing newline, NUL at
 * line[len]). It may be called from several threads at once. */
typedef void (*nbpf_log_fn)(void *ctx, const char *line, uint32_t len);
/* nbpf_set_log_sink installs fn (NULL restores the default: stderr). */
void nbpf_set_log_sink(nbpf_log_fn fn, void *ctx);
/* nbpf_printk_set_rate allows `per_sec` lines per second with bursts of
 * `burst` lines across the process; per_sec == 0 removes the limit.
 * Default: 20 lines/s, burst 40. */
void nbpf_printk_set_rate(uint32_t per_sec, uint32_t burst);
/* nbpf_printk_dropped returns how many lines the rate limit dropped. */
uint64_t nbpf_printk_dropped(void);
/* nbpf_printk_format formats fmt (fmt_size bytes including its NUL) with up
 * to three arguments into out (always NUL-terminated, truncated to cap-1).
 * Returns the untruncated length, or -EINVAL for a bad format. */
int nbpf_printk_format(char *out, uint32_t cap, const char *fmt, uint32_t fmt_size,
                       const uint64_t args[3]);
/* A built-in sink that keeps lines in memory for nbpf_capture_drain. */
void nbpf_capture_sink(void *ctx, const char *line, uint32_t len);
/* nbpf_capture_drain moves up to cap bytes of captured lines ('\n'-ended)
 * into out and returns how many it moved. */
uint32_t nbpf_capture_drain(char *out, uint32_t cap);

/* The calling thread's per-CPU slot (what bpf_get_smp_processor_id returns). */
uint32_t nbpf_this_slot(void);

#ifdef __cplusplus
}
#endif
#endif /* NCCLBPF_MAPS_H */

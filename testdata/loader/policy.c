// SPDX-License-Identifier: MIT
/* policy.c: the loader's main test object (built with -mcpu=v3).
 *
 * It holds BTF-defined maps of several types, a legacy "maps" section map,
 * global data in .rodata, .data and .bss, string literals (.rodata.str1.1),
 * a static subprogram called from two programs, a global subprogram and
 * programs in several sections. loader_test.go depends on the names and
 * on the marked lines; keep them in step.
 */
#include "common.h"

struct stats {
	__u64 calls;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct stats);
} stats_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} size_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, __u64);
} lru_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} percpu_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

struct legacy_map_def legacy_counts SEC("maps") = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = 4,
	.value_size = 8,
	.max_entries = 8,
};

/* Global data: one variable in each of .rodata, .data and .bss. */
volatile const __u64 small_threshold = 4096;
volatile const __u32 big_factor = 3;
__u64 decisions = 7;
__u32 last_algo;
/* Static: references to it are relative to the .data section symbol, with
 * the byte offset in the instruction (it follows decisions in .data). */
static __u64 history[2] = {11, 22};

/* Static: clang relocates calls to it against the .text section symbol. */
static __attribute__((noinline)) __u32 pick_algo(__u64 bytes)
{
	if (bytes < small_threshold) /* LINE:pick_algo */
		return 1;
	return 2 + (__u32)(bytes / (small_threshold * big_factor));
}

/* Global: clang relocates calls to it against its own symbol. */
__attribute__((noinline)) int bump(__u32 idx)
{
	struct stats *s = bpf_map_lookup_elem(&stats_array, &idx);

	if (!s)
		return 0;
	s->calls++;
	return 1;
}

SEC("tuner")
int tuner_main(struct ctx *c)
{
	__u32 algo = pick_algo(c->bytes); /* LINE:tuner_call */
	__u64 bytes = c->bytes;
	__u32 *seen = bpf_map_lookup_elem(&size_hash, &bytes);

	if (seen)
		algo = *seen;
	c->algo = algo;
	last_algo = algo;
	decisions++;
	history[1] += bytes; /* LINE:history */
	bump(0);
	return 0;
}

SEC("profiler/coll_end")
int on_coll_end(struct ctx *c)
{
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&percpu_counts, &key);
	__u64 *l;
	__u64 *ev;

	if (n)
		*n += 1;
	l = bpf_map_lookup_elem(&legacy_counts, &key);
	if (l)
		*l = pick_algo(c->bytes);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (ev) {
		*ev = c->bytes;
		bpf_ringbuf_submit(ev, 0);
	}
	return 0;
}

SEC("profiler/coll_start")
int on_coll_start(struct ctx *c)
{
	__u32 key = c->coll;
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&lru_cache, &key, &now, BPF_ANY);
	bpf_trace_printk("coll %d\n", sizeof("coll %d\n"), key); /* LINE:printk */
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

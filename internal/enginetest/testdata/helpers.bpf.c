// SPDX-License-Identifier: MIT
// Test programs of package enginetest written the way policies are: libbpf
// map definitions, bpf_helpers.h helpers, bpf_printk with its format in
// .rodata, a `volatile const` setting, and atomic adds on global data. Each
// program has its own section "enginetest/NAME" (a hook the test
// registers); r1 points to struct et_ctx.
// Rebuild: scripts/build-bpf.sh
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct et_ctx {
	__u64 key, val, flags, out;
};

struct val {
	__u64 a, b;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u64);
	__type(value, struct val);
} hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4);
	__type(key, __u64);
	__type(value, struct val);
} lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct val);
} array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} ring SEC(".maps");

volatile const __u64 scale = 1; // set at load time (bundle.Options.Vars)
__u64 calls;                    // .bss, counted with atomic adds

struct event {
	__u64 key, val, time;
};

// hash[key] = {val * scale, key} with ctx->flags; r0 = the helper's result.
SEC("enginetest/update")
long update(struct et_ctx *c)
{
	__u64 k = c->key;
	struct val v = {c->val * scale, k};
	__sync_fetch_and_add(&calls, 1);
	return bpf_map_update_elem(&hash, &k, &v, c->flags);
}

// r0 = hash[key].a, -1 when missing; the same for the LRU map into out
// after storing {key, key} in it (BPF_ANY).
SEC("enginetest/lookup")
long lookup(struct et_ctx *c)
{
	__u64 k = c->key;
	struct val v = {k, k}, *p;
	__sync_fetch_and_add(&calls, 1);
	bpf_map_update_elem(&lru, &k, &v, BPF_ANY);
	p = bpf_map_lookup_elem(&lru, &k);
	c->out = p ? p->a : -1;
	p = bpf_map_lookup_elem(&hash, &k);
	return p ? (long)p->a : -1;
}

// r0 = bpf_map_delete_elem(&hash, &key); out = the same on the array.
SEC("enginetest/delete")
long delete(struct et_ctx *c)
{
	__u64 k = c->key;
	__u32 i = (__u32)c->key;
	__sync_fetch_and_add(&calls, 1);
	c->out = bpf_map_delete_elem(&array, &i);
	return bpf_map_delete_elem(&hash, &k);
}

// Atomic adds: array[key & 3].a += val, pcpu[0] += 1; out = the CPU slot;
// r0 = the new array value.
SEC("enginetest/add")
long add(struct et_ctx *c)
{
	__u32 i = c->key & 3, zero = 0;
	struct val *v = bpf_map_lookup_elem(&array, &i);
	__u64 *n = bpf_map_lookup_elem(&pcpu, &zero);
	if (!v || !n)
		return -1;
	__sync_fetch_and_add(n, 1);
	c->out = bpf_get_smp_processor_id();
	return __sync_add_and_fetch(&v->a, c->val);
}

// One event by reserve/submit (discarded when flags == 1), one by output;
// r0 = the output's result, -1 when the reservation failed.
SEC("enginetest/ring")
long ring_events(struct et_ctx *c)
{
	struct event *e = bpf_ringbuf_reserve(&ring, sizeof *e, 0);
	if (!e)
		return -1;
	e->key = c->key;
	e->val = c->val;
	e->time = bpf_ktime_get_ns();
	if (c->flags == 1)
		bpf_ringbuf_discard(e, 0);
	else
		bpf_ringbuf_submit(e, 0);
	struct event o = {c->key + 1, c->val, bpf_get_prandom_u32()};
	return bpf_ringbuf_output(&ring, &o, sizeof o, 0);
}

// bpf_printk with its format in .rodata; r0 = the helper's result.
SEC("enginetest/printk")
long printk(struct et_ctx *c)
{
	return bpf_printk("key=%llu scale=%llu val=%d", c->key, scale, (int)c->val);
}

char LICENSE[] SEC("license") = "MIT";

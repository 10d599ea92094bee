// Realistic policies that must be accepted: loops over arrays, struct
// copies, map-value updates, subprograms, global data.
#include "vtest.h"

struct hist {
	__u64 count[16];
	__u64 total;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct hist);
} hists SEC(".maps");

struct decision {
	__u32 algo;
	__u32 proto;
	__u64 bytes;
	__u64 stamp;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct decision);
} cache SEC(".maps");

volatile const __u64 small_limit = 65536;
volatile const __u32 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
__u64 calls;
__u32 last_algo;

NOINLINE __u32 log2_bucket(__u64 v)
{
	__u32 b = 0;

	for (int i = 0; i < 15; i++) {
		if (v < 2)
			break;
		v >>= 1;
		b++;
	}
	return b;
}

NOINLINE int record(__u32 bucket, __u64 bytes)
{
	__u32 k = 0;
	struct hist *h = bpf_map_lookup_elem(&hists, &k);

	if (!h)
		return 0;
	if (bucket > 15)
		bucket = 15;
	h->count[bucket]++;
	h->total += bytes;
	return 1;
}

NOINLINE __u32 pick(const struct vtest_ctx *c, __u32 fallback)
{
	if (c->bytes < small_limit)
		return table[c->op & 7];
	return fallback;
}

SEC("vtest")
int ok_histogram(struct vtest_ctx *c)
{
	__u32 b = log2_bucket(c->bytes);

	record(b, c->bytes);
	__sync_fetch_and_add(&calls, 1);
	return b;
}

SEC("vtest")
int ok_cached_decision(struct vtest_ctx *c)
{
	__u64 key = c->bytes ^ ((__u64)c->op << 56);
	struct decision *d = bpf_map_lookup_elem(&cache, &key);
	struct decision nd = {};

	if (d) {
		c->algo = d->algo;
		c->proto = d->proto;
		return 0;
	}
	nd.algo = pick(c, 2);
	nd.proto = c->nranks > 8 ? 2 : 0;
	nd.bytes = c->bytes;
	nd.stamp = bpf_ktime_get_ns();
	bpf_map_update_elem(&cache, &key, &nd, BPF_ANY);
	c->algo = nd.algo;
	c->proto = nd.proto;
	last_algo = nd.algo;
	return 0;
}

SEC("vtest")
int ok_struct_copy(struct vtest_ctx *c)
{
	__u32 k = c->op & 15;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	struct val copy;

	if (!v)
		return 0;
	copy = *v;
	copy.hits++;
	copy.bytes += c->bytes;
	copy.slots[c->flags & 7] = c->nranks;
	*v = copy;
	return copy.slots[0] & 0xff;
}

SEC("vtest")
int ok_cost_scan(struct vtest_ctx *c)
{
	__u32 best = 0, bestc = c->cost[0];
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

#pragma unroll
	for (int i = 1; i < 8; i++) {
		if (c->cost[i] < bestc) {
			bestc = c->cost[i];
			best = i;
		}
	}
	for (int i = 0; i < 8; i++)
		if (i != best)
			c->cost[i] = 0xffffffff;
	if (v)
		v->slots[best]++;
	c->algo = best;
	return 0;
}

SEC("vtest")
int ok_running_average(struct vtest_ctx *c)
{
	__u64 key = c->op;
	__u64 *avg = bpf_map_lookup_elem(&hash, &key);
	__u64 cur = c->bytes;

	if (!avg) {
		bpf_map_update_elem(&hash, &key, &cur, BPF_NOEXIST);
		return 0;
	}
	*avg = (*avg * 7 + cur) / 8;
	return *avg > small_limit;
}

SEC("vtest")
int ok_copy_to_ringbuf(struct vtest_ctx *c)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&arr, &k);
	struct val *e;

	if (!v)
		return 0;
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	for (int i = 0; i < 8; i++)
		e->slots[i] = v->slots[i];
	e->hits = v->hits;
	e->bytes = v->bytes;
	bpf_ringbuf_submit(e, 0);
	return 1;
}

SEC("vtest")
int ok_division_warning(struct vtest_ctx *c)
{
	__u32 per_rank = c->bytes / c->nranks; /* WARNING W100 */

	return per_rank > 4096;
}

SEC("vtest")
int ok_variable_stack_index(struct vtest_ctx *c)
{
	__u32 buf[8];

	for (int i = 0; i < 8; i++)
		buf[i] = c->cost[i];
	return buf[c->flags & 7] & 0xff;
}

SEC("vtest")
int ok_search_table(struct vtest_ctx *c)
{
	__u32 want = c->op;
	int found = 0;

	for (int i = 0; i < 8; i++) {
		if (table[i] == want) {
			found = i + 1;
			break;
		}
	}
	return found;
}

SEC("vtest")
int ok_many_branches(struct vtest_ctx *c)
{
	__u32 a = 0;

	if (c->op & 1)
		a += 1;
	if (c->op & 2)
		a += 2;
	if (c->op & 4)
		a += 4;
	if (c->op & 8)
		a += 8;
	if (c->nranks > 16)
		a += 16;
	if (c->bytes > 1 << 20)
		a += 32;
	if (c->flags & 1)
		a += 64;
	if (c->small > 7)
		a += 128;
	return a;
}

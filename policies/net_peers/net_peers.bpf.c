// SPDX-License-Identifier: MIT
// net_peers: per network peer and direction, the completed requests, their bytes and a latency
// histogram (log2 buckets of microseconds), in the hash map `net_peers` that the CLI dumps
// (ncclbpf map dump PID net_peers); and the slowest sending peer of this process in the array map
// `net_slow`: [0] its peer_key, [1] its latency EWMA in ns, [2] its connection id, [3] the EWMA of
// typical sends (outliers move it slowly), [4] how many sends it has been slow for. A peer is "slow" once it has completed at least
// 16 sends and its EWMA is more than twice the typical one. Observes only.
#include "ncclbpf.h"
#include "ncclbpf_net.h"

#define MAP_TYPE_HASH 1
#define MAP_TYPE_ARRAY 2
#define UPDATE_NOEXIST 1
#define NP_BUCKETS 16

struct np_key {
	__u64 peer_key;
	__u32 is_send;
	__u32 dev;
};

struct np_val {
	__u64 count;
	__u64 bytes;
	__u64 ewma_ns; /* weight 1/8 */
	__u64 max_ns;
	__u64 conn_id; /* the latest connection to this peer */
	__u64 hist[NP_BUCKETS]; /* [i]: latency in [2^i, 2^(i+1)) us; [0] also below 1 us; [15] and above */
};

struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct np_key);
	__type(value, struct np_val);
} net_peers SEC(".maps");

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} net_slow SEC(".maps");

static __attribute__((always_inline)) __u32 bucket(__u64 ns)
{
	__u64 us = ns >> 10; /* ~microseconds */
	__u32 b = 0;
	if (us >= (1ull << 8)) { b += 8; us >>= 8; }
	if (us >= (1ull << 4)) { b += 4; us >>= 4; }
	if (us >= (1ull << 2)) { b += 2; us >>= 2; }
	if (us >= (1ull << 1)) { b += 1; }
	if (b > NP_BUCKETS - 1)
		b = NP_BUCKETS - 1;
	return b;
}

static __attribute__((always_inline)) __u64 *slot(__u32 k)
{
	return bpf_map_lookup_elem(&net_slow, &k);
}

static __attribute__((always_inline)) void account(struct ncclbpf_net_ctx *ctx, __u32 is_send)
{
	struct np_key k = {.peer_key = ctx->peer_key, .is_send = is_send, .dev = (__u32)ctx->dev};
	__u64 ns = ctx->duration_ns;
	struct np_val *v = bpf_map_lookup_elem(&net_peers, &k);
	if (!v) {
		struct np_val z = {};
		bpf_map_update_elem(&net_peers, &k, &z, UPDATE_NOEXIST);
		v = bpf_map_lookup_elem(&net_peers, &k);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->bytes, ctx->bytes);
	__u32 b = bucket(ns);
	if (b < NP_BUCKETS)
		__sync_fetch_and_add(&v->hist[b], 1);
	if (ns > v->max_ns)
		v->max_ns = ns;
	__u64 e = v->ewma_ns;
	e = e ? e - (e >> 3) + (ns >> 3) : ns;
	v->ewma_ns = e;
	v->conn_id = ctx->conn_id;
	if (!is_send)
		return;

	__u64 *all = slot(3), *key = slot(0), *ew = slot(1), *conn = slot(2), *n = slot(4);
	if (!all || !key || !ew || !conn || !n)
		return;
	/* the baseline follows typical sends: outliers (over twice it) move it by 1/64 only */
	__u64 g = *all;
	if (!g)
		g = ns;
	else if (ns <= 2 * g)
		g = g - (g >> 3) + (ns >> 3);
	else
		g = g - (g >> 6) + (ns >> 6);
	*all = g;
	if (*key == ctx->peer_key) {
		*ew = e;
		if (e > 2 * g)
			*n += 1;
		return;
	}
	if (v->count >= 16 && e > 2 * g && e > *ew) {
		*key = ctx->peer_key;
		*ew = e;
		*conn = ctx->conn_id;
		*n = 1;
	}
}

SEC("net/send_end")
int net_peers_send(struct ncclbpf_net_ctx *ctx)
{
	account(ctx, 1);
	return 0;
}

SEC("net/recv_end")
int net_peers_recv(struct ncclbpf_net_ctx *ctx)
{
	account(ctx, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

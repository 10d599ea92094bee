// SPDX-License-Identifier: MIT
// net_count_b: a test policy of the net wrapper (testhost/net_host.c, plugin/e2e/net_test.go). It counts
// completed sends and receives, their bytes and the connections in the array map "net_counts"
// (0 sends, 1 receives, 2 bytes sent, 3 bytes received, 4 connections); net_count_a and net_count_b
// define it alike, so a reload carries the counts over and none is lost or counted twice.
#include "ncclbpf.h"
#include "ncclbpf_net.h"

struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} net_counts SEC(".maps");

static __attribute__((always_inline)) void add(__u32 k, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&net_counts, &k);
	if (v)
		__sync_fetch_and_add(v, n);
}

SEC("net/send_end")
int count_send_b(struct ncclbpf_net_ctx *ctx)
{
	add(0, 1);
	add(2, ctx->bytes);
	return 0;
}

SEC("net/recv_end")
int count_recv_b(struct ncclbpf_net_ctx *ctx)
{
	add(1, 1);
	add(3, ctx->bytes);
	return 0;
}

SEC("net/conn")
int count_conn_b(struct ncclbpf_net_ctx *ctx)
{
	add(4, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

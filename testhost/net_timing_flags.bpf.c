// SPDX-License-Identifier: MIT
// net_timing_flags: a test policy of the net wrapper's clock (plugin/e2e/net_test.go). Requests are
// timed only for a program that reads start_ns, end_ns or duration_ns; this one reads only flags,
// so every send completes with NCCLBPF_NET_F_UNTIMED. In "net_counts": 0 sends, 5 untimed sends, 6 sends with
// a duration.
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
int timing_send(struct ncclbpf_net_ctx *ctx)
{
	add(0, 1);
	if (ctx->flags & NCCLBPF_NET_F_UNTIMED)
		add(5, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

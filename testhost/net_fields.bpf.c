// SPDX-License-Identifier: MIT
// net_fields: a test policy of the net wrapper's context (plugin/e2e/net_test.go, TestNetFields). It
// reads every field of struct ncclbpf_net_ctx and checks it against what testhost/net_host.c's
// transfer does (device 0, tags = message numbers, messages of at most 65536 bytes, the policy loaded
// before the first request, so every request is timed). In the array "net_fields": 0 sends, 1
// receives, 2 connections seen; 3.. the events where a group of fields was wrong (3 event, 4 kind and
// reserved, 5 abi_version and comm_id, 6 conn_id, dev and peer_key, 7 tag and n, 8 bytes and
// posted_bytes, 9 times and flags, 10 local_seq); 11 completions flagged NCCLBPF_NET_F_UNSIZED (whose
// bytes must then be posted_bytes). The wrapper fills only the fields a program reads:
// this one reads them all. Which net versions NCCL may call with, and from which one it passes a
// communicator id, are internal/ncclabi/ctxfill's: the test sets them (NCCLBPF_POLICY_CONFIG).
#include "ncclbpf.h"
#include "ncclbpf_net.h"

struct {
	__uint(type, 2 /* BPF_MAP_TYPE_ARRAY */);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} net_fields SEC(".maps");

volatile const __u32 abi_oldest = 8, abi_newest = 12, comm_id_since = 11;

static __attribute__((always_inline)) void add(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&net_fields, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __attribute__((always_inline)) void common(struct ncclbpf_net_ctx *ctx, __u32 event)
{
	if (ctx->event != event)
		add(3);
	if (ctx->reserved != 0)
		add(4);
	if (ctx->abi_version < abi_oldest || ctx->abi_version > abi_newest ||
	    (ctx->abi_version < comm_id_since) != (ctx->comm_id == 0) ||
	    (ctx->comm_id != 0 && ctx->comm_id != 0xc0ffee))
		add(5);
	if (ctx->conn_id < 1 || ctx->conn_id > 1000 || ctx->dev != 0 || ctx->peer_key == 0)
		add(6);
	if (ctx->local_seq > 10000000)
		add(10);
}

static __attribute__((always_inline)) void end(struct ncclbpf_net_ctx *ctx, __u32 event)
{
	common(ctx, event);
	if (ctx->kind != 0)
		add(4);
	if (ctx->n != 1 || ctx->tag < 0 || ctx->tag > 1000000)
		add(7);
	if (ctx->bytes > ctx->posted_bytes || ctx->posted_bytes > 65536 ||
	    (event == NCCLBPF_NET_SEND_END && ctx->bytes != ctx->posted_bytes) ||
	    ((ctx->flags & NCCLBPF_NET_F_UNSIZED) && ctx->bytes != ctx->posted_bytes))
		add(8);
	if (ctx->flags & NCCLBPF_NET_F_UNSIZED)
		add(11);
	if ((ctx->flags & ~NCCLBPF_NET_F_UNSIZED) != 0 || ctx->start_ns == 0 || ctx->end_ns < ctx->start_ns ||
	    ctx->duration_ns != ctx->end_ns - ctx->start_ns)
		add(9);
}

SEC("net/send_end")
int fields_send(struct ncclbpf_net_ctx *ctx)
{
	add(0);
	end(ctx, NCCLBPF_NET_SEND_END);
	return 0;
}

SEC("net/recv_end")
int fields_recv(struct ncclbpf_net_ctx *ctx)
{
	add(1);
	end(ctx, NCCLBPF_NET_RECV_END);
	return 0;
}

SEC("net/conn")
int fields_conn(struct ncclbpf_net_ctx *ctx)
{
	add(2);
	common(ctx, NCCLBPF_NET_CONN);
	if (ctx->kind < NCCLBPF_NET_KIND_LISTEN || ctx->kind > NCCLBPF_NET_KIND_ACCEPT)
		add(4);
	if (ctx->n != 0 || ctx->tag != -1)
		add(7);
	if (ctx->bytes != 0 || ctx->posted_bytes != 0)
		add(8);
	if (ctx->start_ns != 0 || ctx->end_ns == 0 || ctx->duration_ns != 0 || ctx->flags != 0)
		add(9);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// The shapes of ordinary.c in profiler and net programs, as a user
// rewrites the skeletons of `ncclbpf new`: a void function doing the
// update, a log line whose format is a local array, and a range check of
// the form (unsigned)(i - lo) < n.
#include "../../include/ncclbpf.h"
#include "../../include/ncclbpf_profiler.h"
#include "../../include/ncclbpf_net.h"

struct coll_time { __u64 count; __u64 total_ns; __u64 max_ns; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct coll_time);
} coll_time SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[8]);
} per_func SEC(".maps");

static __attribute__((noinline)) void record(struct coll_time *t, __u64 ns)
{
	__sync_fetch_and_add(&t->count, 1);
	__sync_fetch_and_add(&t->total_ns, ns);
	if (ns > t->max_ns)
		t->max_ns = ns;
}

SEC("profiler/coll_end")
int ok_profiler_void_function(struct ncclbpf_prof_ctx *ctx)
{
	__u32 func = (__u32)ctx->func;
	struct coll_time *t = bpf_map_lookup_elem(&coll_time, &func);
	if (!t) {
		struct coll_time zero = {};
		bpf_map_update_elem(&coll_time, &func, &zero, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&coll_time, &func);
		if (!t)
			return 0;
	}
	record(t, ctx->duration_ns);
	return 0;
}

SEC("profiler/coll_end")
int ok_profiler_stack_format(struct ncclbpf_prof_ctx *ctx)
{
	char fmt[] = "slow: func %u took %llu ns";
	if (ctx->duration_ns > 1000000)
		bpf_trace_printk(fmt, sizeof(fmt), (__u32)ctx->func, ctx->duration_ns);
	return 0;
}

SEC("profiler/coll_end")
int ok_profiler_range_check(struct ncclbpf_prof_ctx *ctx)
{
	__u32 zero = 0;
	int f = ctx->func;
	__u64 *v = bpf_map_lookup_elem(&per_func, &zero);
	if (v && (unsigned)(f - 1) < 7)
		__sync_fetch_and_add(&v[f], 1);
	return 0;
}
struct peer_bytes { __u64 sends; __u64 bytes; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct peer_bytes);
} peer_bytes SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[16]);
} size_hist SEC(".maps");

static __attribute__((noinline)) void add(struct peer_bytes *p, __u64 bytes)
{
	__sync_fetch_and_add(&p->sends, 1);
	__sync_fetch_and_add(&p->bytes, bytes);
}

SEC("net/send_end")
int ok_net_void_function(struct ncclbpf_net_ctx *ctx)
{
	__u64 peer = ctx->peer_key;
	struct peer_bytes *p;
	if (ctx->flags & NCCLBPF_NET_F_ERROR)
		return 0;
	p = bpf_map_lookup_elem(&peer_bytes, &peer);
	if (!p) {
		struct peer_bytes zero = {};
		bpf_map_update_elem(&peer_bytes, &peer, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&peer_bytes, &peer);
		if (!p)
			return 0;
	}
	add(p, ctx->bytes);
	return 0;
}

SEC("net/send_end")
int ok_net_stack_format(struct ncclbpf_net_ctx *ctx)
{
	char fmt[] = "send error to %llx";
	if (ctx->flags & NCCLBPF_NET_F_ERROR)
		bpf_trace_printk(fmt, sizeof(fmt), ctx->peer_key);
	return 0;
}

SEC("net/send_end")
int ok_net_log2_bucket(struct ncclbpf_net_ctx *ctx)
{
	__u32 zero = 0;
	int b = 64 - __builtin_clzll(ctx->bytes | 1);   /* log2 bucket, 1..64 */
	__u64 *h = bpf_map_lookup_elem(&size_hist, &zero);
	if (h && (unsigned)(b - 10) < 16)
		__sync_fetch_and_add(&h[b - 10], 1);
	return 0;
}
char LICENSE[] SEC("license") = "Dual MIT/GPL";

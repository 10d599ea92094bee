// SPDX-License-Identifier: MIT
// latency_stats: per collective and size bucket (log2 of the bytes), the count, EWMA, maximum,
// total and latest latency of completed collectives, in the hash map `latency` that the CLI can
// dump (ncclbpf map dump). Observes only: it has no tuner program and changes no NCCL decision.
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

/* Linux's numbering (uapi bpf.h), spelled locally so that no kernel header is needed. */
#define MAP_TYPE_HASH 1
#define UPDATE_NOEXIST 1

#include "latency_stats.h"

struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ls_key);
	__type(value, struct ls_val);
} latency SEC(".maps");

#define LS_LOOKUP(k) ((struct ls_val *)bpf_map_lookup_elem(&latency, (k)))
#define LS_INSERT(k, v) bpf_map_update_elem(&latency, (k), (v), UPDATE_NOEXIST)
#define LS_ATOMIC_ADD(p, v) __sync_fetch_and_add((p), (v))
#include "latency_stats.h"

SEC("profiler/coll_end")
int latency_stats(struct ncclbpf_prof_ctx *ctx)
{
	__u64 ns = ncclbpf_prof_latency_ns(ctx);
	ls_update((__u32)ctx->func, ctx->bytes, ns);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

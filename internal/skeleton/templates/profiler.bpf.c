// SPDX-License-Identifier: MIT
// __NAME__: a profiler policy: count and time completed collectives per function. Build, check, try:
//   __BUILD__
//   ncclbpf verify __NAME__.bpf.o
//   ncclbpf run __NAME__.bpf.o --set func=allreduce --set duration_ns=250000 --repeat 3
// Then in a job: NCCL_PROFILER_PLUGIN=libncclbpf.so NCCLBPF_POLICY=$PWD/__NAME__.bpf.o, and
// ncclbpf map dump PID coll_time while it runs.
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

struct coll_time {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
};

/* Per NCCLBPF_PROF_FUNC_*: what completed and how long it took on this rank (rank-local). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct coll_time);
} coll_time SEC(".maps");

SEC("profiler/coll_end")
int __NAME__(struct ncclbpf_prof_ctx *ctx)
{
	__u32 func = (__u32)ctx->func;
	__u64 ns = ctx->duration_ns;
	struct coll_time *t = bpf_map_lookup_elem(&coll_time, &func);

	if (!t) {
		struct coll_time zero = {};
		bpf_map_update_elem(&coll_time, &func, &zero, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&coll_time, &func);
		if (!t)
			return 0;
	}
	__sync_fetch_and_add(&t->count, 1);
	__sync_fetch_and_add(&t->total_ns, ns);
	if (ns > t->max_ns)
		t->max_ns = ns; /* racy between threads: a close maximum is enough here */
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

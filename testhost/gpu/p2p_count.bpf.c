// SPDX-License-Identifier: MIT
// p2p_count: the profiler bundle of the GPU check (scripts/gpu-check.sh). It counts every completed
// send and receive exactly, per NCCL function (array map p2p_count, index = ctx->func: 6 send,
// 7 recv) and per communicator (hash map p2p_by_comm, key = comm_id, value = events).
//
// Reading the count without the control plane: bpf_printk (NCCL's INFO log, rate-limited to
// 20 lines/s by the plugin) reports the first event of each function, the event that reaches
// `target` (set with NCCLBPF_POLICY_CONFIG=target=N) and any event past it. "reached" without
// "PAST" for both functions proves the count is exactly N.
//
// Built twice (scripts/gpu-check.sh ships both): plain, and with -DVARIANT_B as the object a reload
// swaps in. Variant B has the same maps (a reload carries their contents over) and also counts its
// own events in b_count, which shows that the new code ran after the reload.
#include "ncclbpf.h"
#include "ncclbpf_profiler.h"

#define MAP_TYPE_HASH 1
#define MAP_TYPE_ARRAY 2

volatile const __u64 target = 0; /* events per function that the run is expected to reach */

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} p2p_count SEC(".maps");

struct {
	__uint(type, MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} p2p_by_comm SEC(".maps");

#ifdef VARIANT_B
struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} b_count SEC(".maps");
#endif

SEC("profiler/p2p_end")
int p2p_count_end(struct ncclbpf_prof_ctx *ctx)
{
	__u32 k = (__u32)ctx->func & 15;
	__u64 *n = bpf_map_lookup_elem(&p2p_count, &k);
	if (!n)
		return 0;
	__u64 c = __sync_fetch_and_add(n, 1) + 1;

	__u64 comm = ctx->comm_id;
	__u64 *pc = bpf_map_lookup_elem(&p2p_by_comm, &comm);
	if (pc) {
		__sync_fetch_and_add(pc, 1);
	} else {
		__u64 one = 1;
		/* BPF_NOEXIST: a racing first insert fails; then add to the winner's value */
		if (bpf_map_update_elem(&p2p_by_comm, &comm, &one, 1) != 0) {
			pc = bpf_map_lookup_elem(&p2p_by_comm, &comm);
			if (pc)
				__sync_fetch_and_add(pc, 1);
		}
	}
#ifdef VARIANT_B
	__u64 *b = bpf_map_lookup_elem(&b_count, &k);
	if (b)
		__sync_fetch_and_add(b, 1);
#endif
	if (c == 1)
		bpf_printk("p2p_count first func %d bytes %llu flags %u", ctx->func, ctx->bytes, ctx->flags);
	if (target && c == target)
		bpf_printk("p2p_count reached func %d count %llu", ctx->func, c);
	if (target && c > target)
		bpf_printk("p2p_count PAST target func %d count %llu", ctx->func, c);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* SPDX-License-Identifier: MIT */
/*
 * latency_stats.h: key and value of the latency_stats map, and the update the policy applies on
 * every completed collective; shared by the eBPF bundle and the native C baseline of the benchmark
 * (testhost/profiler_native.c). Include it once for the types, define the map, then define
 * LS_LOOKUP / LS_INSERT / LS_ATOMIC_ADD and include it again for the update.
 */
#ifndef NCCLBPF_POLICY_LATENCY_STATS_TYPES
#define NCCLBPF_POLICY_LATENCY_STATS_TYPES

/* Key: collective (NCCLBPF_PROF_FUNC_*) and size bucket = floor(log2(bytes)) (0 for 0 bytes). */
struct ls_key {
	__u32 func;
	__u32 bucket;
};

/* Value, what `ncclbpf map dump` prints. Latency = GPU kernel span when NCCL reports GPU timers
 * (ABI v4+), else host time from the task start to the last kernel channel. */
struct ls_val {
	__u64 count;    /* collectives completed */
	__u64 ewma_ns;  /* exponentially weighted moving average, alpha 1/8 */
	__u64 max_ns;   /* largest latency seen */
	__u64 total_ns; /* sum (mean = total_ns / count) */
	__u64 last_ns;  /* latest */
};

#endif

/* The update: compiled once the includer has defined the map accessors (include this file again). */
#if defined(LS_LOOKUP) && !defined(NCCLBPF_POLICY_LATENCY_STATS_LOGIC)
#define NCCLBPF_POLICY_LATENCY_STATS_LOGIC

static __always_inline __u32 ls_log2(__u64 v)
{
	__u32 l = 0;
	if (v >> 32) { v >>= 32; l += 32; }
	if (v >> 16) { v >>= 16; l += 16; }
	if (v >> 8) { v >>= 8; l += 8; }
	if (v >> 4) { v >>= 4; l += 4; }
	if (v >> 2) { v >>= 2; l += 2; }
	if (v >> 1) { l += 1; }
	return l;
}

static __always_inline void ls_update(__u32 func, __u64 bytes, __u64 ns)
{
	struct ls_key k = {.func = func, .bucket = ls_log2(bytes)};
	struct ls_val *v = LS_LOOKUP(&k);
	if (!v) {
		struct ls_val z = {.count = 1, .ewma_ns = ns, .max_ns = ns, .total_ns = ns, .last_ns = ns};
		LS_INSERT(&k, &z);
		return;
	}
	LS_ATOMIC_ADD(&v->count, 1);
	LS_ATOMIC_ADD(&v->total_ns, ns);
	v->ewma_ns = v->ewma_ns - (v->ewma_ns >> 3) + (ns >> 3);
	if (ns > v->max_ns)
		v->max_ns = ns;
	v->last_ns = ns;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * adaptive.h: the logic of the adaptive policy, shared by the eBPF bundle (adaptive.bpf.c) and the
 * native C version the test host runs for comparison (testhost/profiler_native.c). Include it once
 * for the types, define the maps, then define the accessors and include it again for the logic:
 *
 *   ADAPTIVE_LOCAL_LOOKUP(k)     -> struct adaptive_cands *  (rank-local measurements) or 0
 *   ADAPTIVE_LOCAL_INSERT(k, v)  insert if absent
 *   ADAPTIVE_AGREED_LOOKUP(k)    -> const struct adaptive_cands * (agreed: the same on every rank) or 0
 *   ADAPTIVE_ATOMIC_ADD(p, v)    atomic *p += v on a __u64
 *
 * and the tunables ADAPTIVE_ROUNDS, ADAPTIVE_PERIOD, ADAPTIVE_WINDOW, ADAPTIVE_MARGIN.
 *
 * Rank consistency by construction: the profiler side writes only the local map; the tuner side
 * reads only rank-uniform inputs (call_seq, size, collective, NCCL's cost table and availability,
 * the tunables) and the agreed map, which the control plane fills from every rank's local map
 * (`ncclbpf agree --reduce min:12,mean:12`: counts by their minimum over the ranks, latencies by
 * their mean) and switches at the same call on every rank. The tuner writes no map at all.
 *
 * Tuner, per (communicator, collective, size bucket), with A the agreed record (or none):
 *   explore  when call_seq % PERIOD < WINDOW, or, while call_seq < PERIOD or A is missing, when a
 *            candidate worth exploring (available and within 2^prune of NCCL's cheapest cell) has
 *            fewer than ROUNDS agreed samples: the first such candidate from a start that walks all
 *            candidates evenly with call_seq (a Weyl sequence, so that any interleaving of sizes
 *            still visits every candidate of every bucket);
 *   exploit  otherwise: among the candidates with agreed samples whose agreed latency is within
 *            MARGIN/64 of the lowest, the one NCCL's cost table ranks first (fewer channels first).
 *            Nothing is latched: the choice is a function of uniform inputs only, and changes when
 *            the agreed map does (at the agreed call).
 */
#ifndef NCCLBPF_POLICY_ADAPTIVE_TYPES
#define NCCLBPF_POLICY_ADAPTIVE_TYPES

/* Candidates: (TREE, RING) x (LL, LL128, SIMPLE) x (4, 16 channels); index a*6 + p*2 + c. */
#define ADAPTIVE_NCAND 12
#define ADAPTIVE_NBUCKETS 16 /* size buckets of 4x: [4^b, 4^(b+1)) bytes, the last open-ended */

struct adaptive_key {
	__u64 comm_id;
	__u32 coll;
	__u32 bucket;
};

/* One bucket's measurements of every candidate: the value of both maps (element-wise reducible:
 * 12 counts, then 12 latencies). */
struct adaptive_cands {
	__u64 count[ADAPTIVE_NCAND];   /* collectives measured (agreed: the fewest any rank measured) */
	__u64 ewma_ns[ADAPTIVE_NCAND]; /* EWMA of the latency, alpha 1/4 (agreed: the ranks' mean) */
};

#endif

/* The logic: compiled once the includer has defined the accessors (include this file again). */
#if defined(ADAPTIVE_LOCAL_LOOKUP) && !defined(NCCLBPF_POLICY_ADAPTIVE_LOGIC)
#define NCCLBPF_POLICY_ADAPTIVE_LOGIC

static __always_inline __u32 adaptive_bucket(__u64 bytes)
{
	__u32 l = 0;
	if (bytes >> 32) { bytes >>= 32; l += 32; }
	if (bytes >> 16) { bytes >>= 16; l += 16; }
	if (bytes >> 8) { bytes >>= 8; l += 8; }
	if (bytes >> 4) { bytes >>= 4; l += 4; }
	if (bytes >> 2) { bytes >>= 2; l += 2; }
	if (bytes >> 1) { l += 1; }
	l >>= 1;
	return l < ADAPTIVE_NBUCKETS ? l : ADAPTIVE_NBUCKETS - 1;
}

static __always_inline int adaptive_cand_algo(__u32 c) { return (int)(c / 6); }
static __always_inline int adaptive_cand_proto(__u32 c) { return (int)((c / 2) % 3); }
static __always_inline int adaptive_cand_nch(__u32 c) { return (c & 1) ? 16 : 4; }

/* adaptive_cand_of maps what NCCL ran to a candidate (-1: not one). Channel counts NCCL capped
 * are attributed to the nearer class. */
static __always_inline int adaptive_cand_of(int algo, int proto, int nch)
{
	if (algo < 0 || algo > 1 || proto < 0 || proto > 2 || nch <= 0)
		return -1;
	return algo * 6 + proto * 2 + (nch >= 10 ? 1 : 0);
}

static __always_inline int adaptive_available(__u32 avail_mask, __u32 c)
{
	return (avail_mask >> (adaptive_cand_algo(c) * 3 + adaptive_cand_proto(c))) & 1;
}

/* ---- profiler side: one measured collective, into the rank-local map ---- */
static __always_inline void adaptive_record(__u64 comm_id, int coll, __u64 bytes, int algo, int proto, int nch,
					    __u64 ns)
{
	int ci = adaptive_cand_of(algo, proto, nch);
	if (ci < 0 || coll < 0 || coll > 4 || ns == 0)
		return;
	__u32 c = (__u32)ci & 15; /* the mask keeps the bound visible to the verifier */
	if (c >= ADAPTIVE_NCAND)
		return;
	struct adaptive_key k = {.comm_id = comm_id, .coll = (__u32)coll, .bucket = adaptive_bucket(bytes)};
	struct adaptive_cands *s = ADAPTIVE_LOCAL_LOOKUP(&k);
	if (!s) {
		struct adaptive_cands z = {};
		ADAPTIVE_LOCAL_INSERT(&k, &z);
		s = ADAPTIVE_LOCAL_LOOKUP(&k);
		if (!s)
			return;
	}
	__u64 e = s->ewma_ns[c];
	s->ewma_ns[c] = e ? e - (e >> 2) + (ns >> 2) : ns;
	ADAPTIVE_ATOMIC_ADD(&s->count[c], 1);
}

/* adaptive_plausible returns the cells (bit a*3+p, TREE and RING rows) worth exploring: available,
 * and estimated by NCCL at most 2^exp2 times the cheapest available cell. The cost table is
 * rank-uniform, so the pruned schedule still is. c[a*3+p] are the float bits of NCCL's costs; for
 * non-negative floats, adding k << 23 to the bits multiplies the value by 2^k. */
static __always_inline __u32 adaptive_plausible(__u32 c0, __u32 c1, __u32 c2, __u32 c3, __u32 c4, __u32 c5,
						__u32 avail_mask, __u32 exp2)
{
	__u32 c[6] = {c0, c1, c2, c3, c4, c5};
	__u32 lo = 0x7f800000u; /* +inf */
#if defined(__clang__)
#pragma unroll
#endif
	for (int i = 0; i < 6; i++)
		if (((avail_mask >> i) & 1) && c[i] < lo)
			lo = c[i];
	__u32 lim = lo + (exp2 << 23);
	__u32 m = 0;
#if defined(__clang__)
#pragma unroll
#endif
	for (int i = 0; i < 6; i++)
		if (((avail_mask >> i) & 1) && c[i] <= lim)
			m |= 1u << i;
	return m;
}

/* adaptive_weyl maps call_seq to a start in 0..NCAND-1 that is equidistributed along any arithmetic
 * subsequence of calls (golden-ratio Weyl sequence in 32-bit fixed point). */
static __always_inline __u32 adaptive_weyl(__u64 call_seq)
{
	__u64 f = (call_seq * 0x9e3779b97f4a7c15ull) >> 32; /* fractional part, 32 bits */
	return (__u32)((f * ADAPTIVE_NCAND) >> 32);
}

/* Branch-free helpers for the tuner: the verifier follows every branch, and a tuner that decides
 * with a dozen data-dependent branches per candidate costs it milliseconds. Values must stay below
 * 2^61 (latencies in ns, sample counts, cost bits); adaptive_clamp keeps them there. */
#define ADAPTIVE_BIG (1ull << 61)
static __always_inline __u64 adaptive_clamp(__u64 x) { return x & (ADAPTIVE_BIG - 1); }
static __always_inline __u64 adaptive_lt(__u64 x, __u64 y) { return (x - y) >> 63; }   /* x < y */
static __always_inline __u64 adaptive_nz(__u64 x) { return (x | (0 - x)) >> 63; }       /* x != 0 */
static __always_inline __u64 adaptive_min(__u64 x, __u64 y)
{
	__u64 d = x - y;
	return y + (d & (__u64)((__s64)d >> 63));
}
static __always_inline __u32 adaptive_popcount16(__u32 v)
{
	v = v - ((v >> 1) & 0x5555);
	v = (v & 0x3333) + ((v >> 2) & 0x3333);
	v = (v + (v >> 4)) & 0x0f0f;
	return (v + (v >> 8)) & 0x1f;
}

/* ---- tuner side: returns the candidate to run, or -1 to leave the decision to NCCL ----
 * avail_mask: the cells NCCL may choose; explore_mask: those worth exploring (adaptive_plausible);
 * cost: the float bits of NCCL's costs of cells 0..5 (TREE and RING rows). All rank-uniform. */
static __always_inline int adaptive_decide(__u64 comm_id, __u32 coll, __u64 bytes, __u64 call_seq,
					   __u32 avail_mask, __u32 explore_mask, const __u32 *cost)
{
	struct adaptive_key k = {.comm_id = comm_id, .coll = coll, .bucket = adaptive_bucket(bytes)};
	const struct adaptive_cands *a = ADAPTIVE_AGREED_LOOKUP(&k);
	/* Candidate masks (bit c): worth exploring; available. */
	__u32 worth = 0, avail = 0;
#if defined(__clang__)
#pragma unroll
#endif
	for (__u32 c = 0; c < ADAPTIVE_NCAND; c++) {
		__u32 cell = (__u32)(adaptive_cand_algo(c) * 3 + adaptive_cand_proto(c));
		worth |= ((explore_mask >> cell) & 1) << c;
		avail |= ((avail_mask >> cell) & 1) << c;
	}
	/* Worth exploring and with fewer than ROUNDS agreed samples. */
	__u32 under = worth;
	if (a) {
		under = 0;
#if defined(__clang__)
#pragma unroll
#endif
		for (__u32 c = 0; c < ADAPTIVE_NCAND; c++)
			under |= (__u32)adaptive_lt(adaptive_clamp(a->count[c]), ADAPTIVE_ROUNDS) << c;
		under &= worth;
	}
	__u32 pool = 0;
	if (call_seq % ADAPTIVE_PERIOD < ADAPTIVE_WINDOW)
		pool = worth;
	else if (!a || call_seq < ADAPTIVE_PERIOD)
		pool = under;
	if (pool) {
		/* The first candidate of pool from `first` on, cyclically: rotate, take the lowest bit. */
		__u32 first = adaptive_weyl(call_seq);
		__u32 rot = ((pool >> first) | (pool << (ADAPTIVE_NCAND - first))) & ((1u << ADAPTIVE_NCAND) - 1);
		__u32 idx = adaptive_popcount16((rot & (0u - rot)) - 1);
		__u32 c = first + idx;
		__u32 t = c - ADAPTIVE_NCAND;
		return (int)(t + (ADAPTIVE_NCAND & (__u32)((__s32)t >> 31)));
	}
	if (!a)
		return -1;
	/* The measured-best set: available candidates with agreed samples whose agreed latency is within
	 * MARGIN/64 of the lowest; from it the one NCCL's own cost model ranks first, fewer channels
	 * first on a tie (the lowest (cost, candidate) pair). */
	__u64 lo = ADAPTIVE_BIG;
#if defined(__clang__)
#pragma unroll
#endif
	for (__u32 c = 0; c < ADAPTIVE_NCAND; c++) {
		__u64 e = adaptive_clamp(a->ewma_ns[c]);
		__u64 ok = ((avail >> c) & 1) & adaptive_nz(adaptive_clamp(a->count[c])) & adaptive_nz(e);
		lo = adaptive_min(lo, ADAPTIVE_BIG + ((e - ADAPTIVE_BIG) & (0 - ok)));
	}
	if (lo == ADAPTIVE_BIG)
		return -1;
	__u64 lim = lo + (lo * ADAPTIVE_MARGIN) / 64;
	__u64 best = ADAPTIVE_BIG;
#if defined(__clang__)
#pragma unroll
#endif
	for (__u32 c = 0; c < ADAPTIVE_NCAND; c++) {
		__u64 e = adaptive_clamp(a->ewma_ns[c]);
		__u64 ok = ((avail >> c) & 1) & adaptive_nz(adaptive_clamp(a->count[c])) & adaptive_nz(e) &
			   (1 - adaptive_lt(lim, e));
		__u64 key = ((__u64)cost[adaptive_cand_algo(c) * 3 + adaptive_cand_proto(c)] << 4) | c;
		best = adaptive_min(best, ADAPTIVE_BIG + ((key - ADAPTIVE_BIG) & (0 - ok)));
	}
	if (best == ADAPTIVE_BIG)
		return -1;
	return (int)(best & 15);
}

#endif

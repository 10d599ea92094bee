/* SPDX-License-Identifier: MIT */
/*
 * adaptive.h: the logic of the adaptive policy, shared by the eBPF bundle (adaptive.bpf.c) and the
 * native C version the test host runs for comparison (testhost/profiler_native.c). Include it once
 * for the types, define the maps, then define the accessors and include it again for the logic:
 *
 *   ADAPTIVE_STATE_LOOKUP(k)     -> struct adaptive_state *  or 0
 *   ADAPTIVE_STATE_INSERT(k, v)  insert if absent
 *   ADAPTIVE_STAT_LOOKUP(k)      -> struct adaptive_stat *   or 0
 *   ADAPTIVE_STAT_INSERT(k, v)   insert if absent
 *   ADAPTIVE_ATOMIC_ADD(p, v)    atomic *p += v on a __u64
 *
 * and the tunables ADAPTIVE_ROUNDS, ADAPTIVE_PERIOD, ADAPTIVE_CHECK, ADAPTIVE_MARGIN (adaptive.bpf.c).
 *
 * Schedule (per communicator, collective and size bucket; n = tuner calls of that bucket so far,
 * which every rank counts alike because ranks issue the same collectives in the same order):
 *   n % PERIOD <  NCAND*ROUNDS : explore candidate (n % PERIOD) % NCAND (the first from there whose
 *                                (algorithm, protocol) NCCL's cost table does not rule out)
 *   otherwise                  : exploit the latched choice, re-evaluated only when
 *                                n % PERIOD == NCAND*ROUNDS or n % CHECK == 0: among the candidates
 *                                whose EWMA latency is within MARGIN/64 of the lowest, the one NCCL's
 *                                cost table ranks first (fewer channels first on a tie).
 */
#ifndef NCCLBPF_POLICY_ADAPTIVE_TYPES
#define NCCLBPF_POLICY_ADAPTIVE_TYPES

/* Candidates: (TREE, RING) x (LL, LL128, SIMPLE) x (4, 16 channels); index a*6 + p*2 + c. */
#define ADAPTIVE_NCAND 12
#define ADAPTIVE_NBUCKETS 16 /* size buckets of 4x: [4^b, 4^(b+1)) bytes, the last open-ended */

struct adaptive_skey {
	__u64 comm_id;
	__u32 coll;
	__u32 bucket;
};

struct adaptive_state {
	__u64 calls;  /* tuner calls in this bucket so far (rank-uniform) */
	__u32 choice; /* latched candidate */
	__u32 valid;  /* choice is set */
};

struct adaptive_mkey {
	__u64 comm_id;
	__u32 coll;
	__u16 bucket;
	__u16 cand;
};

struct adaptive_stat {
	__u64 count;   /* collectives measured */
	__u64 ewma_ns; /* EWMA, alpha 1/4 */
	__u64 last_ns;
	__u64 min_ns;
};

#endif

/* The logic: compiled once the includer has defined the accessors (include this file again). */
#if defined(ADAPTIVE_STAT_LOOKUP) && !defined(NCCLBPF_POLICY_ADAPTIVE_LOGIC)
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

/* ---- profiler side: one measured collective ---- */
static __always_inline void adaptive_record(__u64 comm_id, int coll, __u64 bytes, int algo, int proto, int nch,
					    __u64 ns)
{
	int c = adaptive_cand_of(algo, proto, nch);
	if (c < 0 || coll < 0 || coll > 4 || ns == 0)
		return;
	struct adaptive_mkey k = {.comm_id = comm_id, .coll = (__u32)coll,
				  .bucket = (__u16)adaptive_bucket(bytes), .cand = (__u16)c};
	struct adaptive_stat *s = ADAPTIVE_STAT_LOOKUP(&k);
	if (!s) {
		struct adaptive_stat z = {.count = 1, .ewma_ns = ns, .last_ns = ns, .min_ns = ns};
		ADAPTIVE_STAT_INSERT(&k, &z);
		return;
	}
	ADAPTIVE_ATOMIC_ADD(&s->count, 1);
	s->ewma_ns = s->ewma_ns - (s->ewma_ns >> 2) + (ns >> 2);
	s->last_ns = ns;
	if (ns < s->min_ns)
		s->min_ns = ns;
}

static __always_inline __u64 adaptive_ewma(__u64 comm_id, __u32 coll, __u32 bucket, __u32 c)
{
	struct adaptive_mkey k = {.comm_id = comm_id, .coll = coll, .bucket = (__u16)bucket, .cand = (__u16)c};
	struct adaptive_stat *s = ADAPTIVE_STAT_LOOKUP(&k);
	return s ? s->ewma_ns : 0;
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

/* ---- tuner side: returns the candidate to run, or -1 to leave the decision to NCCL ----
 * avail_mask: the cells NCCL may choose; explore_mask: those worth exploring (adaptive_plausible);
 * cost: the float bits of NCCL's costs of cells 0..5 (TREE and RING rows), rank-uniform. */
static __always_inline int adaptive_decide(__u64 comm_id, __u32 coll, __u64 bytes, __u32 avail_mask,
					   __u32 explore_mask, const __u32 *cost)
{
	__u32 b = adaptive_bucket(bytes);
	struct adaptive_skey sk = {.comm_id = comm_id, .coll = coll, .bucket = b};
	struct adaptive_state *st = ADAPTIVE_STATE_LOOKUP(&sk);
	if (!st) {
		struct adaptive_state z = {0};
		ADAPTIVE_STATE_INSERT(&sk, &z);
		st = ADAPTIVE_STATE_LOOKUP(&sk);
		if (!st)
			return -1;
	}
	__u64 n = st->calls;
	st->calls = n + 1;
	__u64 cyc = n % ADAPTIVE_PERIOD;
	__u64 explore = (__u64)ADAPTIVE_NCAND * ADAPTIVE_ROUNDS;
	if (cyc < explore) {
		__u32 first = (__u32)(cyc % ADAPTIVE_NCAND);
#if defined(__clang__)
#pragma unroll
#endif
		for (__u32 k = 0; k < ADAPTIVE_NCAND; k++) {
			__u32 c = first + k;
			if (c >= ADAPTIVE_NCAND)
				c -= ADAPTIVE_NCAND;
			if (adaptive_available(explore_mask, c))
				return (int)c;
		}
		return -1;
	}
	if (cyc == explore || n % ADAPTIVE_CHECK == 0 || !st->valid) {
		/* The measured-best set: candidates within MARGIN/64 of the lowest EWMA. From it, take
		 * the one NCCL's own (rank-uniform) cost model ranks first, fewer channels first on a tie.
		 * Ranks whose measurements differ by less than the margin thus pick the same candidate;
		 * the choice is recomputed from scratch at every checkpoint (no memory that could keep
		 * ranks apart once their measurements agree again). */
		__u64 e[ADAPTIVE_NCAND];
		__u64 lo = 0;
#if defined(__clang__)
#pragma unroll
#endif
		for (__u32 c = 0; c < ADAPTIVE_NCAND; c++) {
			e[c] = adaptive_available(avail_mask, c) ? adaptive_ewma(comm_id, coll, b, c) : 0;
			if (e[c] && (lo == 0 || e[c] < lo))
				lo = e[c];
		}
		if (lo) {
			__u64 lim = lo + (lo * ADAPTIVE_MARGIN) / 64;
			__u32 pick = ADAPTIVE_NCAND, pick_cost = 0xffffffffu;
#if defined(__clang__)
#pragma unroll
#endif
			for (__u32 c = 0; c < ADAPTIVE_NCAND; c++) {
				if (!e[c] || e[c] > lim)
					continue;
				__u32 k = cost[adaptive_cand_algo(c) * 3 + adaptive_cand_proto(c)];
				if (k < pick_cost) {
					pick = c;
					pick_cost = k;
				}
			}
			if (pick < ADAPTIVE_NCAND) {
				st->choice = pick;
				st->valid = 1;
			}
		}
	}
	if (!st->valid || st->choice >= ADAPTIVE_NCAND || !adaptive_available(avail_mask, st->choice))
		return -1;
	return (int)st->choice;
}

#endif

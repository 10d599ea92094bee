/* SPDX-License-Identifier: MIT */
/*
 * tuner.c: the tuner shim on top of the hook slots: NCCL's tuner calls, version-neutral (the
 * per-version entry points and the exported ncclTunerPlugin_v2.._v7 tables: tuner_abi.c).
 *
 * Written from the ABI fact sheet (docs: nccl-plugin-abi.md); no NCCL code or header is used. The
 * exported symbols are data objects, as NCCL expects.
 *
 * Hot path (getCollInfo): read the slot, fill a stack context, call the program, check the decision,
 * write it into NCCL's table. No Go, no lock, no allocation, no read-modify-write. Everything that
 * can go wrong leaves NCCL's defaults in place and returns ncclSuccess; only init fails, and only
 * when NCCLBPF_STRICT is set and the policy did not load.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ncclbpf.h"
#include "internal.h"
#include "tuner.h"
#include "decisions_fold.h"
#include "metrics_fold.h"
#include "loader.h"

#define NB_INVALID_USAGE 5 /* ncclInvalidUsage */

_Static_assert(sizeof(struct ncclbpf_tuner_ctx) == 160, "tuner ctx size is part of the ABI");
_Static_assert(sizeof(struct ncclbpf_chunk_ctx) == 64, "chunk ctx size is part of the ABI");
_Static_assert(sizeof(float) == sizeof(uint32_t), "float bits");

static void nb_log(nb_logger_t log, int level, unsigned long flags, int line, const char *msg) {
	if (log)
		log(level, flags, __FILE__, line, "%s", msg); /* "%s": messages may contain '%' */
}

_Static_assert(sizeof(((struct nb_comm *)0)->tctx) == sizeof(struct ncclbpf_tuner_ctx), "nb_comm.tctx size");

/* nb_tctx is c's tuner context. */
static inline struct ncclbpf_tuner_ctx *nb_tctx(struct nb_comm *c) { return (struct ncclbpf_tuner_ctx *)(void *)c->tctx; }

/* ---- init / finalize ------------------------------------------------------------------------- */

int nb_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes, nb_logger_t log, const nb_nvl_info_t *nvl,
            uint32_t abi) {
	if (ctx == NULL)
		return NB_SUCCESS; /* nowhere to put state: NCCL will pass NULL to getCollInfo */
	*ctx = NULL;
	nb_load_for_init(log);
	if (ncclbpf_strict_failed())
		return NB_INVALID_USAGE; /* NCCLBPF_STRICT: NCCL fails the communicator's init */
	/* nb_comm has 64-byte aligned members: calloc's alignment is not enough. */
	size_t csize = (sizeof(struct nb_comm) + 63) & ~(size_t)63;
	struct nb_comm *c = aligned_alloc(64, csize);
	if (c)
		memset(c, 0, csize);
	if (c == NULL) {
		/* No state: getCollInfo sees NULL and leaves NCCL's defaults. Never fail init. */
		nb_log(log, NB_LOG_WARN, NB_SUBSYS_INIT | NB_SUBSYS_TUNING, __LINE__,
		       "ncclbpf: out of memory for communicator state; NCCL's default tuning stays in effect");
		return NB_SUCCESS;
	}
	c->comm_id = comm_id;
	/* The decision digest starts from the environment the env plugin served (0 without it): ranks
	 * given different NCCL parameters then differ in digest from their first decision on. */
	atomic_store_explicit(&c->digest, ncclbpf_env_digest(), memory_order_relaxed);
	c->n_ranks = n_ranks > UINT32_MAX ? UINT32_MAX : (uint32_t)n_ranks;
	c->n_nodes = n_nodes > UINT32_MAX ? UINT32_MAX : (uint32_t)n_nodes;
	c->nvl_domains = nvl ? nvl->nNvlDomains : -1;
	c->nvl_min = nvl ? nvl->minRanksPerNvlDomain : -1;
	c->nvl_max = nvl ? nvl->maxRanksPerNvlDomain : -1;
	c->abi = abi;
	c->log = log;
	struct ncclbpf_tuner_ctx *x = nb_tctx(c);
	x->comm_id = c->comm_id;
	x->n_ranks = c->n_ranks;
	x->n_nodes = c->n_nodes;
	x->n_nvl_domains = c->nvl_domains;
	x->min_ranks_per_nvl_domain = c->nvl_min;
	x->max_ranks_per_nvl_domain = c->nvl_max;
	x->abi_version = c->abi;
	x->avail_mask = 0;
	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++)
		for (int p = 0; p < NCCLBPF_NUM_PROTOCOLS; p++)
			x->cost[a][p] = NCCLBPF_COST_UNAVAILABLE_BITS;
	nb_register(c);
	*ctx = c;
	return NB_SUCCESS;
}

int nb_finalize(void *ctx) {
	struct nb_comm *c = ctx;
	if (c) {
		char msg[256];
#define L(f) (unsigned long long)atomic_load_explicit(&c->f, memory_order_relaxed)
		snprintf(msg, sizeof msg,
		         "ncclbpf: communicator %#llx (%u ranks, %u nodes, tuner v%u): %llu getCollInfo calls, %llu ran "
		         "the policy, %llu decisions applied, %llu dropped, %llu channel counts clamped; %llu chunk sizes set",
		         (unsigned long long)c->comm_id, c->n_ranks, c->n_nodes, c->abi, L(seq), (unsigned long long)nb_policy_calls(c), L(applied),
		         L(rejected), L(clamped), L(chunk_applied));
#undef L
		nb_log(c->log, NB_LOG_INFO, NB_SUBSYS_TUNING, __LINE__, msg);
		nb_unregister(c);
		free(c);
	}
	return NB_SUCCESS;
}

/* ---- decisions ------------------------------------------------------------------------------- */

enum { NB_WHY_RANGE, NB_WHY_UNAVAILABLE, NB_WHY_CHANNELS, NB_WHY_PARTIAL_V2, NB_WHY_CHUNK, NB_WHY_COLLNET_CH, NB_WHY_N };
static atomic_uint nb_warned; /* bit per NB_WHY_*: each kind of rejection is logged once */

/* Cold: count is done by the caller; log the first rejection of each kind in the process. */
__attribute__((cold, noinline)) static void nb_reject_log(struct nb_comm *c, int why, int coll, uint64_t n_bytes,
                                                          long a, long p, long ch) {
	unsigned bit = 1u << why;
	if (atomic_load_explicit(&nb_warned, memory_order_relaxed) & bit)
		return;
	if (atomic_fetch_or(&nb_warned, bit) & bit)
		return;
	static const char *what[NB_WHY_N] = {
	    "an algorithm/protocol outside NCCL's table",
	    "an algorithm/protocol cell that NCCL marked unavailable (-1.0)",
	    "a negative channel count",
	    "an algorithm without a protocol (or the reverse), which tuner ABI v2 cannot express",
	    "a chunk size below the protocol's grain or above 1 GiB",
	    "a channel count for a collective NCCL will run with CollNet (NCCL takes it as the channel span "
	    "without capping it to the communicator's channels, which a tuner cannot know)",
	};
	char msg[768];
	snprintf(msg, sizeof msg,
	         "ncclbpf: the tuner policy chose %s (collective %d, %llu bytes: algorithm %ld, protocol %ld, "
	         "channels/chunk %ld); %s. Further such decisions are counted, not logged.",
	         what[why], coll, (unsigned long long)n_bytes, a, p, ch,
	         why == NB_WHY_COLLNET_CH ? "the channel count was dropped (NCCL's default kept), the rest applied"
	                                  : "the decision was dropped and NCCL's default kept");
	nb_log(c->log, NB_LOG_WARN, NB_SUBSYS_TUNING, __LINE__, msg);
}

static inline int nb_is_collnet(int a) { return a == NCCLBPF_ALGO_COLLNET_DIRECT || a == NCCLBPF_ALGO_COLLNET_CHAIN; }

/* Whether NCCL may run the collective with CollNet once table is returned to it: the cell the policy
 * made cheapest is CollNet; or, for partial or channel-only decisions, NCCL's own pick from table (the
 * strictly smallest non-negative cell in scan order) is CollNet; with tuner v2 (table is virtual) any
 * available CollNet cell counts. */
static int nb_runs_collnet(const float *table, int numAlgo, int numProto, int v2, int chosen_algo, int a) {
	if (chosen_algo >= 0)
		return nb_is_collnet(chosen_algo);
	if (a >= 0)
		return nb_is_collnet(a); /* restricted to row a */
	int pick = -1;
	float best = 3.4e38f;
	for (int i = 0; i < numAlgo; i++)
		for (int j = 0; j < numProto; j++) {
			float v = table[i * numProto + j];
			if (!(v >= 0.0f))
				continue;
			if (v2 && nb_is_collnet(i))
				return 1;
			if (v < best) {
				best = v;
				pick = i;
			}
		}
	return nb_is_collnet(pick);
}

/* The decision of a program that NCCL cannot take as such: partial choices, clamping, rejections. */
__attribute__((noinline)) static void nb_apply_slow(struct nb_comm *c, uint64_t seq, int coll, size_t n_bytes,
                                                    float *table, int numAlgo, int numProto, int *nChannels, int v2,
                                                    int chosen[2], int a, int p, int ch) {
	int why;
	uint32_t cell = NCCLBPF_CELL_CHANNELS, differs = 0;
	if (a < -1 || a >= numAlgo || p < -1 || p >= numProto) {
		why = NB_WHY_RANGE;
		goto reject;
	}
	if (ch < 0) {
		why = NB_WHY_CHANNELS;
		goto reject;
	}
	if (a >= 0 && p >= 0) {
		if (!(table[a * numProto + p] >= 0.0f)) { /* -1.0 (or any negative, or NaN): NCCL skips it */
			why = NB_WHY_UNAVAILABLE;
			goto reject;
		}
		cell = (uint32_t)(a * NCCLBPF_NUM_PROTOCOLS + p);
		differs = nb_costlier(table, numAlgo * numProto, table[a * numProto + p]);
		table[a * numProto + p] = 0.0f;
		chosen[0] = a;
		chosen[1] = p;
	} else if (a >= 0 || p >= 0) {
		if (v2) {
			why = NB_WHY_PARTIAL_V2;
			goto reject;
		}
		/* Restrict NCCL to row a (or column p): disable the available cells outside it. Writing
		 * -1.0 is how NCCL itself marks a cell unusable. Refuse if nothing would be left. */
		int left = 0;
		for (int i = 0; i < numAlgo; i++)
			for (int j = 0; j < numProto; j++)
				if ((a >= 0 ? i == a : j == p) && table[i * numProto + j] >= 0.0f)
					left++;
		if (left == 0) {
			why = NB_WHY_UNAVAILABLE;
			goto reject;
		}
		for (int i = 0; i < numAlgo; i++)
			for (int j = 0; j < numProto; j++)
				if (!(a >= 0 ? i == a : j == p) && table[i * numProto + j] >= 0.0f)
					table[i * numProto + j] = -1.0f;
		cell = NCCLBPF_CELL_PARTIAL;
	}
	if (ch > 0 && nb_runs_collnet(table, numAlgo, numProto, v2, chosen[0], a)) {
		/* NCCL uses a CollNet task's channel count unchecked (channels 0..n-1): only its own
		 * default is known to fit the communicator. Keep the rest of the decision. */
		nb_inc(&c->clamped);
		nb_reject_log(c, NB_WHY_COLLNET_CH, coll, n_bytes, a, p, ch);
		ch = 0;
	}
	if (ch > 0) {
		if (ch > NCCLBPF_MAX_CHANNELS) {
			ch = NCCLBPF_MAX_CHANNELS;
			nb_inc(&c->clamped);
		}
		if (nChannels)
			*nChannels = ch;
	}
	nb_inc(&c->applied);
	nb_decided(c, seq, coll, n_bytes, cell, ch, differs);
	return;
reject:
	nb_inc(&c->rejected);
	nb_decided(c, seq, coll, n_bytes, NCCLBPF_CELL_REFUSED, 0, 0);
	nb_reject_log(c, why, coll, n_bytes, a, p, ch);
}

/* Sign bits of the 21 cost cells: bit NCCLBPF_CELL(a,p) set if the cell is negative. */
static inline uint32_t nb_neg_mask(const uint32_t *cost) {
#if defined(__SSE2__)
	uint32_t m = 0;
#pragma GCC unroll 5
	for (int i = 0; i < 20; i += 4)
		m |= (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_loadu_si128((const __m128i *)(cost + i)))) << i;
	return m | (cost[20] >> 31) << 20;
#else
	uint32_t m = 0;
	for (int i = 0; i < 21; i++)
		m |= (cost[i] >> 31) << i;
	return m;
#endif
}

/* Copies a numAlgo x numProto table into the context's 7 x 3 (cells outside it: unavailable). */
__attribute__((noinline)) static void nb_copy_odd_table(struct ncclbpf_tuner_ctx *x, const float *table, int numAlgo,
                                                        int numProto) {
	for (int a = 0; a < NCCLBPF_NUM_ALGORITHMS; a++)
		for (int p = 0; p < NCCLBPF_NUM_PROTOCOLS; p++) {
			uint32_t bits = NCCLBPF_COST_UNAVAILABLE_BITS;
			if (a < numAlgo && p < numProto)
				memcpy(&bits, &table[a * numProto + p], sizeof bits);
			x->cost[a][p] = bits;
		}
}

/*
 * A call runs in three steps: nb_begin counts it, enters the in-call mark and reads the slot;
 * nb_fill stores the call's inputs (those the program reads) into the communicator's context;
 * nb_observe or nb_decide runs the program and takes its outcome. Only the communicator pointer
 * lives across the program's call: the inputs are read back from the context, which the program
 * cannot write (the verifier proves it), so the common paths need few saved registers.
 */

/* nb_begin counts the call and enters the in-call mark; it returns the tuner slot's word, or 0
 * (left to NCCL, the mark already left) when no program is published. */
static inline __attribute__((always_inline)) uintptr_t nb_begin(struct nb_comm *c, uint64_t *seq) {
	uint64_t s = atomic_load_explicit(&c->seq, memory_order_relaxed);
	/* release: the decision record of the previous call is visible before the new count
	 * (decisions.c); a plain store on x86. */
	atomic_store_explicit(&c->seq, s + 1, memory_order_release);
	*seq = s;
	/* From here to nb_leave this thread may be inside published code: the slot word read below
	 * decides both the program and which inputs it needs. */
	nb_enter(c);
	uintptr_t w = atomic_load_explicit(&nb_slots[NCCLBPF_SLOT_TUNER].fn, memory_order_acquire);
	if (__builtin_expect(w == 0, 0)) {
		nb_leave_now(c);
		nb_inc(&c->unrun);
	}
	return w;
}

/* nb_fill stores the call's inputs; the communicator's own fields were filled by init. nccl_shape:
 * table is numAlgo x numProto = NCCL's 7 x 3. */
static inline __attribute__((always_inline)) struct ncclbpf_tuner_ctx *
nb_fill(struct nb_comm *c, uintptr_t w, uint64_t seq, int coll, size_t n_bytes, int pipe_ops, const float *table,
        int numAlgo, int numProto, int reg_buff, int nccl_shape) {
	struct ncclbpf_tuner_ctx *x = nb_tctx(c);
	x->call_seq = seq;
	x->n_bytes = n_bytes;
	x->coll_type = (uint32_t)coll;
	x->num_pipe_ops = pipe_ops;
	x->reg_buff = reg_buff;
	if (__builtin_expect(nccl_shape, 1)) {
		/* The program never reads what it was published with a SKIP bit for (a data-flow
		 * proof at load time), so those inputs stay as they were. */
		if (!(w & NCCLBPF_SLOT_SKIP_COST)) {
			memcpy(x->cost, table, sizeof x->cost); /* 84 bytes, the float bits as they are */
			if (!(w & NCCLBPF_SLOT_SKIP_MASK))
				x->avail_mask = ~nb_neg_mask(&x->cost[0][0]) & ((1u << 21) - 1);
		} else if (!(w & NCCLBPF_SLOT_SKIP_MASK)) {
			x->avail_mask = ~nb_neg_mask((const uint32_t *)(const void *)table) & ((1u << 21) - 1);
		}
	} else {
		nb_copy_odd_table(x, table, numAlgo, numProto);
		x->avail_mask = ~nb_neg_mask(&x->cost[0][0]) & ((1u << 21) - 1);
	}
	return x;
}

/* nb_observe runs a program published with NCCLBPF_SLOT_NO_DECISION: it neither writes nor reads
 * a decision (proved at load), so whatever it returns the call is left to NCCL, and its outputs
 * are neither reset nor read. */
static inline __attribute__((always_inline)) void nb_observe(struct nb_comm *c, uintptr_t w,
                                                             struct ncclbpf_tuner_ctx *x) {
	((ncclbpf_prog_fn)(w & ~NCCLBPF_SLOT_FLAGS))(x);
	nb_leave_now(c);
	nb_count_default(c, x->call_seq, (int)x->coll_type, x->n_bytes);
}

/*
 * nb_decide runs the program and applies its decision to table (numAlgo x numProto floats,
 * contiguous). v2 says whether the caller is tuner v2 (table is virtual; a decision must name both
 * algorithm and protocol); chosen (may be NULL) gets the (algo, proto) cell made cheapest, or
 * stays {-1,-1}. The rare cases are out of line.
 */
static inline __attribute__((always_inline)) void nb_decide(struct nb_comm *c, uintptr_t w,
                                                            struct ncclbpf_tuner_ctx *x, float *table, int numAlgo,
                                                            int numProto, int *nChannels, int v2, int *chosen) {
	x->algorithm = NCCLBPF_ALGO_UNDEF;
	x->protocol = NCCLBPF_PROTO_UNDEF;
	x->n_channels = 0;
	/* The hook returns a C int: the low 32 bits of r0, as the verifier checked them. */
	int32_t rc = (int32_t)((ncclbpf_prog_fn)(w & ~NCCLBPF_SLOT_FLAGS))(x);
	nb_leave_now(c);
	uint64_t seq = x->call_seq, n_bytes = x->n_bytes;
	int coll = (int)x->coll_type;

	/* One 32-bit load per field, as the program stored them: the compiler would otherwise merge
	 * algorithm and protocol into one 64-bit load that cannot be forwarded from the program's two
	 * 32-bit stores (a store-forwarding stall on every applied decision). */
	const volatile struct ncclbpf_tuner_ctx *vx = x;
	int a = vx->algorithm, p = vx->protocol, ch = vx->n_channels;
	if (rc != NCCLBPF_TUNER_APPLY || (a == NCCLBPF_ALGO_UNDEF && p == NCCLBPF_PROTO_UNDEF && ch == 0)) {
		/* "Leave it all to NCCL": counted, not recorded. Every rank that leaves a call to NCCL
		 * gets NCCL's own (rank-consistent) choice, so the record and the digest, which exist to
		 * find ranks that decided differently, need only the decisions a program made. */
		nb_count_default(c, seq, coll, n_bytes);
		return;
	}
	nb_record_decision(c, seq, coll, n_bytes, a, p, ch);
	/* The common decision: a full cell that NCCL has available, channels left or in range. */
	if ((unsigned)a < (unsigned)numAlgo && (unsigned)p < (unsigned)numProto &&
	    (unsigned)ch <= NCCLBPF_MAX_CHANNELS && (ch == 0 || !nb_is_collnet(a)) && table[a * numProto + p] >= 0.0f) {
		uint32_t differs = nb_costlier(table, numAlgo * numProto, table[a * numProto + p]);
		table[a * numProto + p] = 0.0f;
		if (chosen) {
			chosen[0] = a;
			chosen[1] = p;
		}
		if (ch && nChannels)
			*nChannels = ch;
		nb_inc(&c->applied);
		nb_decided(c, seq, coll, n_bytes, (uint32_t)(a * NCCLBPF_NUM_PROTOCOLS + p), ch, differs);
		return;
	}
	int dummy[2] = {-1, -1};
	nb_apply_slow(c, seq, coll, n_bytes, table, numAlgo, numProto, nChannels, v2, chosen ? chosen : dummy, a, p, ch);
}

/* nb_decide_nccl is nb_decide for NCCL's own 7 x 3 table, out of line so that the entry's common
 * paths keep a small frame. */
__attribute__((noinline)) static int nb_decide_nccl(struct nb_comm *c, uintptr_t w, float *table, int *nChannels) {
	nb_decide(c, w, nb_tctx(c), table, NCCLBPF_NUM_ALGORITHMS, NCCLBPF_NUM_PROTOCOLS, nChannels, 0, NULL);
	return NB_SUCCESS;
}

/* nb_tune_any (tuner.h): see nb_decide for v2 and chosen. */
__attribute__((noinline)) void nb_tune_any(struct nb_comm *c, int coll, size_t n_bytes, int pipe_ops, float *table,
                                           int numAlgo, int numProto, int reg_buff, int *nChannels, int v2,
                                           int chosen[2]) {
	if (table == NULL || numAlgo <= 0 || numProto <= 0) {
		atomic_store_explicit(&c->seq, atomic_load_explicit(&c->seq, memory_order_relaxed) + 1,
		                      memory_order_release);
		nb_inc(&c->unrun);
		return;
	}
	uint64_t seq;
	uintptr_t w = nb_begin(c, &seq);
	if (w == 0)
		return;
	int nccl_shape = numAlgo == NCCLBPF_NUM_ALGORITHMS && numProto == NCCLBPF_NUM_PROTOCOLS;
	struct ncclbpf_tuner_ctx *x =
	    nb_fill(c, w, seq, coll, n_bytes, pipe_ops, table, numAlgo, numProto, reg_buff, nccl_shape);
	if (w & NCCLBPF_SLOT_NO_DECISION)
		nb_observe(c, w, x);
	else
		nb_decide(c, w, x, table, numAlgo, numProto, nChannels, v2, chosen);
}

/* getCollInfo (v4..v7; v3 and v2 through tuner_abi.c). NCCL's own table shape takes the short path: a program that makes no
 * decision is run and counted in this frame; one that may decide continues in nb_decide_nccl. */
int nb_get_coll_info(void *ctx, int collType, size_t nBytes, int numPipeOps, float **collCostTable, int numAlgo,
                     int numProto, int regBuff, int *nChannels) {
	struct nb_comm *c = ctx;
	float *table = (float *)collCostTable;
	if (c == NULL)
		return NB_SUCCESS;
	if (__builtin_expect(table == NULL || numAlgo != NCCLBPF_NUM_ALGORITHMS || numProto != NCCLBPF_NUM_PROTOCOLS,
	                     0)) {
		nb_tune_any(c, collType, nBytes, numPipeOps, table, numAlgo, numProto, regBuff, nChannels, 0, NULL);
		return NB_SUCCESS;
	}
	uint64_t seq;
	uintptr_t w = nb_begin(c, &seq);
	if (__builtin_expect(w == 0, 0))
		return NB_SUCCESS;
	struct ncclbpf_tuner_ctx *x = nb_fill(c, w, seq, collType, nBytes, numPipeOps, table, NCCLBPF_NUM_ALGORITHMS,
	                                      NCCLBPF_NUM_PROTOCOLS, regBuff, 1);
	if (w & NCCLBPF_SLOT_NO_DECISION) {
		nb_observe(c, w, x);
		return NB_SUCCESS;
	}
	return nb_decide_nccl(c, w, table, nChannels);
}

/* ---- getChunkSize (v6) ----------------------------------------------------------------------- */

int nb_get_chunk_size(void *ctx, int collType, size_t nBytes, int algo, int proto, int nChannels,
                      size_t *chunkSize) {
	struct nb_comm *c = ctx;
	if (c == NULL || chunkSize == NULL)
		return NB_SUCCESS;
	if (atomic_load_explicit(&nb_slots[NCCLBPF_SLOT_CHUNK_SIZE].fn, memory_order_relaxed) == 0)
		return NB_SUCCESS;
	struct ncclbpf_chunk_ctx x;
	x.comm_id = c->comm_id;
	x.call_seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
	x.n_bytes = nBytes;
	x.chunk_size = *chunkSize;
	x.coll_type = (uint32_t)collType;
	x.algorithm = algo;
	x.protocol = proto;
	x.n_channels = nChannels;
	x.n_ranks = c->n_ranks;
	x.n_nodes = c->n_nodes;
	x.new_chunk_size = 0;

	uint64_t in = nb_enter(c);
	ncclbpf_prog_fn fn = (ncclbpf_prog_fn)(atomic_load_explicit(&nb_slots[NCCLBPF_SLOT_CHUNK_SIZE].fn,
	                                                            memory_order_acquire) &
	                                       ~NCCLBPF_SLOT_FLAGS);
	int32_t rc = fn ? (int32_t)fn(&x) : NCCLBPF_TUNER_DEFAULT;
	nb_leave(c, in);
	nb_inc(&c->chunk_calls);
	if (fn)
		nb_record_chunk(c, x.call_seq, rc == NCCLBPF_TUNER_APPLY ? x.new_chunk_size : 0, collType);
	if (rc != NCCLBPF_TUNER_APPLY || x.new_chunk_size == 0)
		return NB_SUCCESS;
	uint64_t grain = proto == NCCLBPF_PROTO_LL ? 16 : proto == NCCLBPF_PROTO_LL128 ? 1920 : 512;
	if (x.new_chunk_size < grain || x.new_chunk_size > (1ull << 30)) {
		nb_inc(&c->chunk_rejected);
		nb_reject_log(c, NB_WHY_CHUNK, collType, nBytes, algo, proto, (long)x.new_chunk_size);
		return NB_SUCCESS;
	}
	*chunkSize = x.new_chunk_size;
	nb_inc(&c->chunk_applied);
	return NB_SUCCESS;
}

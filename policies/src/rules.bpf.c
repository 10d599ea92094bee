// SPDX-License-Identifier: MIT
// rules: table-driven tuning in the format of NCCL's example CSV tuner
// (NCCLBPF_RULES_FILE=rules.csv, see package tuner for the format). The host
// parses the file once and fills the table below before the program runs;
// the program finds the rules covering a call's size through the size's
// power-of-two range, then takes the first one (file order) that matches
// nodes, ranks and pipelined ops and whose algorithm and protocol NCCL marked
// available: the example tuner's semantics, at a cost that does not grow with
// the number of rules. -1 keeps NCCL's default. With log_matches set
// (NCCLBPF_RULES_LOG=1, or --var log_matches=1 in `ncclbpf run`), each call
// reports through bpf_printk the file line of the rule that matched, or that
// none did.
#include "ncclbpf.h"

#define MAX_IVL   512 /* size ranges per collective (tuner.RulesMaxIvl) */
#define MAX_CAND  8   /* rules covering one range (tuner.RulesMaxCand) */
#define NUM_BKT   64  /* power-of-two size ranges per collective */
#define BKT_PIV   7   /* range starts inside one power-of-two range (tuner.RulesBucketPivots) */
#define BKT_SPLIT 0x40000000u /* some: count those <= n (tuner.RulesBucketSplit) */
#define BKT_WIDE  0x80000000u /* more: search lo[] instead (tuner.RulesBucketWide) */
#define HASH_MUL  0x03f79d71b4cb0a89ull /* tuner.RulesHashMul */
#define LO_CAP    0x7fffffffffffffffull /* sizes searched in lo[] (all below 2^63) are capped here */

/*
 * Sizes n in [2^k, 2^(k+1)) (k = 0 also takes n = 0) fall in bucket ((n smeared right) * HASH_MUL) >> 58,
 * a permutation of k (a de Bruijn-like multiplier). A bucket holds the range that holds 2^k (0 for
 * k = 0) and, when ranges begin strictly inside it (BKT_SPLIT; rare where rules are bounded at powers of
 * two), their starts, ascending, padded with 2^(k+1) mod 2^64 (never <= n): n's range is then base +
 * (how many starts are <= n), counted without branches. Both sides of each test are in [2^k, 2^(k+1)],
 * so start <= n exactly when start + ~n (= start - n - 1) has bit 63 set. 64 bytes.
 */
struct bucket {
	__u64 piv[BKT_PIV];
	__u32 base; /* | BKT_SPLIT: piv[] holds starts; | BKT_WIDE: more than BKT_PIV, search lo[] */
	__u32 pad;
};

/*
 * One candidate rule, precomputed by the host so that matching is two tests:
 *   ((key1 ^ k1) & mask1) | ((key2 ^ pipe_ops) & mask2) == 0  with k1 = nodes << 32 | ranks (wildcards
 *   have their mask bits clear), and avail_mask & need != 0 (the cells NCCL must have available).
 * need == 0 marks an unused slot; the slots of a range are filled in file order from the first.
 */
struct rule {
	__u64 key1, mask1;
	__u32 key2, mask2;
	__u32 need;
	__s32 algorithm, protocol, n_channels; /* -1, -1, 0: NCCL's choice */
	__u32 line;                            /* the rule's line in the rules file */
	__u32 pad[5];                          /* one cache line each */
};

struct table {
	struct bucket b[NCCLBPF_NUM_COLLS][NUM_BKT]; /* first: a rule's fields are within a load's offset */
	struct rule rb[NCCLBPF_NUM_COLLS][NUM_BKT][MAX_CAND]; /* the rules of the range holding b's first size */
	struct rule r[NCCLBPF_NUM_COLLS][MAX_IVL][MAX_CAND];
	__u64 lo[NCCLBPF_NUM_COLLS][MAX_IVL]; /* first size of each range; 2^63 if at or above it, or unused */
};

/* Filled by the host at load time (tuner.RulesTable); all-empty without a rules file. */
struct table ncclbpf_rules;

/* Set at load time: report which rule matched each call (bpf_printk, NCCL's INFO log). */
volatile const __u32 log_matches = 0;

/*
 * The range of a size n < 2^63 among lo[coll] (for buckets with more than BKT_PIV starts): the largest
 * i with lo[i] <= n (lo[0] == 0), by an 8-ary search in three levels (512 = 8^3). Each level counts
 * how many of 7 pivots, loaded independently, are <= n; lo and n are below 2^63 (unused: 2^63), so
 * lo <= n exactly when lo - n - 1 has bit 63 set. No branches: one path for the verifier.
 */
static __always_inline __u64 wide_search(__u64 coll, __u64 n)
{
	const __u64 *lo = ncclbpf_rules.lo[coll];
	__u64 nn = ~n, i = 0;
#define LE(j) ((lo[(j) & (MAX_IVL - 1)] + nn) >> 63)
#define LEVEL(s)                                                                                                       \
	i += (s) * (LE(i + 1 * (s)) + LE(i + 2 * (s)) + LE(i + 3 * (s)) + LE(i + 4 * (s)) + LE(i + 5 * (s)) +          \
	            LE(i + 6 * (s)) + LE(i + 7 * (s)));
	LEVEL(64) LEVEL(8) LEVEL(1)
#undef LEVEL
#undef LE
	return i;
}

/* Read a context field again where it is needed rather than keep it (spilled) for rare paths. */
#define RELOAD(f) (*(volatile typeof(f) *)&(f))

SEC("tuner")
int rules(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 coll = ctx->coll_type;
	__u64 n = ctx->n_bytes;

	if (coll >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_DEFAULT;
	__u64 s = n;
	s |= s >> 1;
	s |= s >> 2;
	s |= s >> 4;
	s |= s >> 8;
	s |= s >> 16;
	s |= s >> 32;
	/* (collective, bucket) as one index into b and rb */
	__u64 h = ((__u64)coll << 6) | ((s * HASH_MUL) >> 58);
	const struct bucket *bk = &ncclbpf_rules.b[0][h];
	/* Unsplit bucket: its one range's rules, at an address known before the bucket is read. */
	const struct rule *r = ncclbpf_rules.rb[0][h];
	__u64 i = bk->base;
	if (i & (BKT_SPLIT | BKT_WIDE)) {
		if (i & BKT_WIDE) {
			n = RELOAD(ctx->n_bytes);
			i = wide_search(coll, n < LO_CAP ? n : LO_CAP);
		} else {
			__u64 nn = ~n;
			i += ((bk->piv[0] + nn) >> 63) + ((bk->piv[1] + nn) >> 63) + ((bk->piv[2] + nn) >> 63) +
			     ((bk->piv[3] + nn) >> 63) + ((bk->piv[4] + nn) >> 63) + ((bk->piv[5] + nn) >> 63) +
			     ((bk->piv[6] + nn) >> 63);
		}
		r = ncclbpf_rules.r[coll][i & (MAX_IVL - 1)];
	}
	__u64 k1 = ((__u64)ctx->n_nodes << 32) | ctx->n_ranks;
	/*
	 * The first candidate (file order) that matches and that NCCL can take wins. Pipelined ops and the
	 * available cells are read from the context where tested: fewer registers live, fewer to save.
	 * regBuff is local to each rank: rules cannot match on it (the rules loader refuses them).
	 */
	const struct rule *hit;
	__u32 need;
#define TRY(k)                                                                                                         \
	need = r[k].need;                                                                                              \
	if (!need)                                                                                                     \
		goto none;                                                                                             \
	if (!(((r[k].key1 ^ k1) & r[k].mask1) | ((r[k].key2 ^ RELOAD(ctx->num_pipe_ops)) & r[k].mask2)) &&           \
	    (need & RELOAD(ctx->avail_mask))) {                                                                        \
		hit = &r[k];                                                                                           \
		goto found;                                                                                            \
	}
	TRY(0) TRY(1) TRY(2) TRY(3) TRY(4) TRY(5) TRY(6) TRY(7)
#undef TRY
none:
	if (log_matches)
		bpf_printk("rules: no rule matched (collective %u, %llu bytes): NCCL decides", RELOAD(ctx->coll_type),
		           RELOAD(ctx->n_bytes));
	return NCCLBPF_TUNER_APPLY;
found:
	ctx->algorithm = hit->algorithm;
	ctx->protocol = hit->protocol;
	ctx->n_channels = hit->n_channels;
	if (log_matches)
		bpf_printk("rules: the rule on line %u matched (collective %u, %llu bytes)", hit->line, RELOAD(ctx->coll_type),
		           RELOAD(ctx->n_bytes));
	return NCCLBPF_TUNER_APPLY;
}

_Static_assert(MAX_IVL == 512, "the three LEVELs of wide_search assume 512 = 8^3 ranges");
_Static_assert(MAX_CAND == 8, "TRY list above assumes 8 candidates");
_Static_assert(BKT_PIV == 7, "the sum over piv[] above assumes 7 starts");
_Static_assert(sizeof(struct bucket) == 64, "tuner.RulesBucketSize");
_Static_assert(sizeof(struct rule) == 64, "tuner.RuleSize");

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
// rules: table-driven tuning in the format of NCCL's example CSV tuner
// (NCCLBPF_RULES_FILE=rules.csv, see package tuner for the format). The host
// parses the file once and fills the table below before the program runs;
// the program finds the rules covering a call's size by binary search over
// per-collective size ranges, then takes the first one (file order) that
// matches nodes, ranks, pipelined ops and regBuff and whose algorithm and
// protocol NCCL marked available: the example tuner's semantics, at a cost
// that does not grow with the number of rules. -1 keeps NCCL's default.
// With log_matches set (NCCLBPF_RULES_LOG=1, or --var log_matches=1 in
// `ncclbpf run`), each call reports through bpf_printk the file line of the
// rule that matched, or that none did.
#include "ncclbpf.h"

#define IVL_BITS 9
#define MAX_IVL  (1 << IVL_BITS) /* size ranges per collective (tuner.RulesMaxIvl) */
#define MAX_CAND 8               /* rules covering one range (tuner.RulesMaxCand) */
#define MAX_BYTES 0x7fffffffffffffffull /* sizes are capped here (tuner.RulesMaxBytes) */

/*
 * One candidate rule, precomputed by the host so that matching is two tests:
 *   ((key1 ^ k1) & mask1) | ((key2 ^ k2) & mask2) == 0  with k1 = nodes << 32 | ranks and
 *   k2 = (u32)pipe_ops << 32 | (u32)reg_buff (wildcards have their mask bits clear), and
 *   avail_mask & need != 0 (the cells NCCL must have available; need == 0 marks an unused slot).
 */
struct rule {
	__u64 key1, mask1, key2, mask2;
	__u32 need;
	__s32 algorithm, protocol, n_channels; /* -1, -1, 0: NCCL's choice */
	__u32 line, pad;                       /* the rule's line in the rules file */
};

struct table {
	__u64 lo[NCCLBPF_NUM_COLLS][MAX_IVL]; /* first size of each range; unused: 2^63 */
	struct rule r[NCCLBPF_NUM_COLLS][MAX_IVL][MAX_CAND];
};

/* Filled by the host at load time (tuner.RulesTable); all-empty without a rules file. */
struct table ncclbpf_rules;

/* Set at load time: report which rule matched each call (bpf_printk, NCCL's INFO log). */
volatile const __u32 log_matches = 0;

SEC("tuner")
int rules(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 coll = ctx->coll_type;
	__u64 n = ctx->n_bytes;
	__u64 i = 0;

	if (coll >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_DEFAULT;
	if (n > MAX_BYTES)
		n = MAX_BYTES;
	const __u64 *lo = ncclbpf_rules.lo[coll];
	/*
	 * Largest i with lo[i] <= n (lo[0] == 0), by an 8-ary search in three levels (512 = 8^3): each
	 * level counts how many of 7 pivots, loaded independently of each other, are <= n and advances
	 * by that many strides. lo and n are at most 2^63, so lo <= n exactly when n - lo has bit 63
	 * clear. No branches: one path for the verifier, no mispredictions, and three dependent steps
	 * instead of nine.
	 */
#define LE(j) (1 - ((n - lo[(j) & (MAX_IVL - 1)]) >> 63))
#define LEVEL(s)                                                                                                       \
	i += (s) * (LE(i + 1 * (s)) + LE(i + 2 * (s)) + LE(i + 3 * (s)) + LE(i + 4 * (s)) + LE(i + 5 * (s)) +          \
	            LE(i + 6 * (s)) + LE(i + 7 * (s)));
	LEVEL(64) LEVEL(8) LEVEL(1)
#undef LEVEL
#undef LE
	/* i <= 511 by construction; say so in a way the compiler cannot drop, for the verifier. */
	__asm__ volatile("" : "+r"(i));
	i &= MAX_IVL - 1;
	const struct rule *r = ncclbpf_rules.r[coll][i & (MAX_IVL - 1)];
	__u64 k1 = ((__u64)ctx->n_nodes << 32) | ctx->n_ranks;
	/* regBuff is local to each rank: rules cannot match on it (the rules loader refuses them), so
	 * its half of key2 stays 0, which every rule's mask2 ignores. */
	__u64 k2 = (__u64)(__u32)ctx->num_pipe_ops << 32;
	__u32 avail = ctx->avail_mask;
	/* The first candidate (file order) that matches and that NCCL can take wins. */
	const struct rule *hit;
#define TRY(k)                                                                                                         \
	if (!(((r[k].key1 ^ k1) & r[k].mask1) | ((r[k].key2 ^ k2) & r[k].mask2)) && (r[k].need & avail)) {            \
		hit = &r[k];                                                                                           \
		goto found;                                                                                            \
	}
	TRY(0) TRY(1) TRY(2) TRY(3) TRY(4) TRY(5) TRY(6) TRY(7)
#undef TRY
	if (log_matches)
		bpf_printk("rules: no rule matched (collective %u, %llu bytes): NCCL decides", coll, n);
	return NCCLBPF_TUNER_APPLY;
found:
	ctx->algorithm = hit->algorithm;
	ctx->protocol = hit->protocol;
	ctx->n_channels = hit->n_channels;
	if (log_matches)
		bpf_printk("rules: the rule on line %u matched (collective %u, %llu bytes)", hit->line, coll, n);
	return NCCLBPF_TUNER_APPLY;
}

_Static_assert(MAX_IVL == 512, "the three LEVELs above assume 512 = 8^3 ranges");
_Static_assert(MAX_CAND == 8, "TRY list above assumes 8 candidates");
_Static_assert(sizeof(struct rule) == 56, "tuner.RuleSize");

char LICENSE[] SEC("license") = "Dual MIT/GPL";

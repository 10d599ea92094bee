// SPDX-License-Identifier: MIT
// rules: table-driven tuning in the format of NCCL's example CSV tuner
// (NCCLBPF_RULES_FILE=rules.csv, see package nccl for the format). The host
// parses the file once and fills the table below before the program runs;
// the program finds the rules covering a call's size by binary search over
// per-collective size ranges, then takes the first one (file order) that
// matches nodes, ranks, pipelined ops and regBuff and whose algorithm and
// protocol NCCL marked available: the example tuner's semantics, at a cost
// that does not grow with the number of rules. -1 keeps NCCL's default.
#include "ncclbpf.h"

#define IVL_BITS 9
#define MAX_IVL  (1 << IVL_BITS) /* size ranges per collective (nccl.RulesMaxIvl) */
#define MAX_CAND 8               /* rules covering one range (nccl.RulesMaxCand) */
#define MAX_BYTES 0x7fffffffffffffffull /* sizes are capped here (nccl.RulesMaxBytes) */

struct rule {
	__s32 n_nodes, n_ranks, num_pipe_ops, reg_buff; /* -1: any */
	__s32 algorithm, protocol, n_channels;          /* -1, -1, 0: NCCL's choice */
	__u32 line;                                     /* in the rules file */
};

struct ivl {
	__u32 n;
	__u32 pad;
	struct rule r[MAX_CAND];
};

struct table {
	__u64 lo[NCCLBPF_NUM_COLLS][MAX_IVL]; /* first size of each range; unused: ~0 */
	struct ivl ivl[NCCLBPF_NUM_COLLS][MAX_IVL];
};

/* Filled by the host at load time (nccl.RulesTable); all-empty without a rules file. */
struct table ncclbpf_rules;

#define COLUMN_MASK 0x49249u /* cells (a, 0) for every a: shift left by p for column p */

/* Applies rule r if it matches the call and NCCL can take it; returns 1 if it did. */
static __always_inline int try_rule(struct ncclbpf_tuner_ctx *ctx, const struct rule *r, __u32 avail)
{
	if (r->n_nodes != -1 && r->n_nodes != (__s32)ctx->n_nodes)
		return 0;
	if (r->n_ranks != -1 && r->n_ranks != (__s32)ctx->n_ranks)
		return 0;
	if (r->num_pipe_ops != -1 && r->num_pipe_ops != ctx->num_pipe_ops)
		return 0;
	if (r->reg_buff != -1 && r->reg_buff != ctx->reg_buff)
		return 0;
	__s32 a = r->algorithm, p = r->protocol;
	__u32 need;
	if (a >= 0 && p >= 0)
		need = 1u << ((a * NCCLBPF_NUM_PROTOCOLS + p) & 31);
	else if (a >= 0)
		need = 7u << ((a * NCCLBPF_NUM_PROTOCOLS) & 31);
	else if (p >= 0)
		need = COLUMN_MASK << (p & 31);
	else
		need = ~0u;
	if (!(avail & need))
		return 0; /* NCCL cannot take it here: try the next rule, as the example does */
	ctx->algorithm = a;
	ctx->protocol = p;
	ctx->n_channels = r->n_channels;
	return 1;
}

SEC("tuner")
int rules(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 coll = ctx->coll_type;
	__u64 n = ctx->n_bytes;
	__u32 i = 0;

	if (coll >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_DEFAULT;
	if (n > MAX_BYTES)
		n = MAX_BYTES; /* unused lo[] entries are ~0: never at or below n */
	const __u64 *lo = ncclbpf_rules.lo[coll];
	/* Largest i with lo[i] <= n (lo[0] == 0): IVL_BITS fixed steps. */
#define STEP(s) if (lo[(i + (s)) & (MAX_IVL - 1)] <= n) i += (s);
	STEP(256) STEP(128) STEP(64) STEP(32) STEP(16) STEP(8) STEP(4) STEP(2) STEP(1)
#undef STEP
	const struct ivl *v = &ncclbpf_rules.ivl[coll][i & (MAX_IVL - 1)];
	__u32 cnt = v->n;
	__u32 avail = ctx->avail_mask;
#define TRY(k) if ((k) < cnt && try_rule(ctx, &v->r[k], avail)) return NCCLBPF_TUNER_APPLY;
	TRY(0) TRY(1) TRY(2) TRY(3) TRY(4) TRY(5) TRY(6) TRY(7)
#undef TRY
	return NCCLBPF_TUNER_APPLY;
}

_Static_assert(MAX_IVL == 512, "STEP list above assumes 512 ranges");
_Static_assert(MAX_CAND == 8, "TRY list above assumes 8 candidates");

char LICENSE[] SEC("license") = "Dual MIT/GPL";

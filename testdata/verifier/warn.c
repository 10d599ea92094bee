// Accepted programs for the real "tuner" hook that get warnings; the CLI's
// test of `ncclbpf verify` checks that a warning names its line.
#include "../../include/ncclbpf.h"

/* n_ranks may be 0 as far as the verifier knows (eBPF then gives 0): the
 * division is accepted with a W100 warning at its line. */
SEC("tuner")
int ok_tuner_division(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 per_rank = ctx->n_bytes / ctx->n_ranks; /* WARNING W100 */

	if (per_rank > 4096)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = NCCLBPF_ALGO_RING;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "MIT";

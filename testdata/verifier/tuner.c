// Programs for the real "tuner" hook (include/ncclbpf.h), also used by the
// CLI's tests of `ncclbpf verify`.
#include "../../include/ncclbpf.h"

struct {
	__uint(type, 1); /* BPF_MAP_TYPE_HASH */
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} choice SEC(".maps");

SEC("tuner")
int ok_tuner_cached(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->n_bytes >> 20;
	__u32 *algo = bpf_map_lookup_elem(&choice, &key);

	if (!algo || *algo > NCCLBPF_ALGO_RING)
		return NCCLBPF_TUNER_DEFAULT;
	ctx->algorithm = *algo;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_tuner_null(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->n_bytes >> 20;
	__u32 *algo = bpf_map_lookup_elem(&choice, &key);

	ctx->algorithm = *algo; /* ERROR E012 */
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int bad_tuner_write_input(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_ranks = 1; /* ERROR E016 */
	return NCCLBPF_TUNER_DEFAULT;
}

// SPDX-License-Identifier: MIT
// agreed_ch: a test policy of the agreed-map machinery (plugin/e2e/agreed_e2e_test.go). Every call takes
// TREE/SIMPLE on the channel count the agreed map `agreed` holds (2 while it holds 0), so that the
// decision record shows at which call each rank switched to a new agreed value. `local` is a
// rank-local map the test fills per process and `ncclbpf agree` reduces into `agreed`.
#include "ncclbpf.h"

#define MAP_TYPE_ARRAY 2

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} local SEC(".maps");

struct {
	__uint(type, MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	NCCLBPF_AGREED;
} agreed SEC(".maps");

SEC("tuner")
int agreed_ch(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	const __u64 *v = bpf_map_lookup_elem(&agreed, &k);
	__u64 ch = v && *v ? *v : 2;
	ctx->algorithm = NCCLBPF_ALGO_TREE;
	ctx->protocol = NCCLBPF_PROTO_SIMPLE;
	ctx->n_channels = (__s32)(ch & 63);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

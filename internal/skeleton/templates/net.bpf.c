// SPDX-License-Identifier: MIT
// __NAME__: a net policy: bytes and sends per remote endpoint. Build, check and try it:
//   __BUILD__
//   ncclbpf verify __NAME__.bpf.o
//   ncclbpf run __NAME__.bpf.o --set peer_key=7 --set bytes=1MiB --repeat 2
// Then in a job: NCCL_NET_PLUGIN=libncclbpf.so NCCLBPF_NET_PLUGIN=<the job's net plugin>
// NCCLBPF_POLICY=$PWD/__NAME__.bpf.o, and ncclbpf map dump PID peer_bytes while it runs.
#include "ncclbpf.h"
#include "ncclbpf_net.h"

struct peer_bytes {
	__u64 sends;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* ctx->peer_key */
	__type(value, struct peer_bytes);
} peer_bytes SEC(".maps");

SEC("net/send_end")
int __NAME__(struct ncclbpf_net_ctx *ctx)
{
	__u64 peer = ctx->peer_key;
	struct peer_bytes *p = bpf_map_lookup_elem(&peer_bytes, &peer);

	if (ctx->flags & NCCLBPF_NET_F_ERROR)
		return 0;
	if (!p) {
		struct peer_bytes zero = {};
		bpf_map_update_elem(&peer_bytes, &peer, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&peer_bytes, &peer);
		if (!p)
			return 0;
	}
	__sync_fetch_and_add(&p->sends, 1);
	__sync_fetch_and_add(&p->bytes, ctx->bytes);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

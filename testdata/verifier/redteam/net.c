// Red team against the net hooks (net/conn, net/send_end, net/recv_end),
// with their real context from include/ncclbpf_net.h. Net programs observe
// the transport and write maps: every context field is read-only, the
// context is 104 bytes, the hooks return 0, and what they measure is
// rank-local. Each bad_ program is what an attacker, or a careless policy,
// would load into the net plugin's data path.
#include "../vtest.h"
#include "ncclbpf.h"
#include "ncclbpf_net.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64[2]);
} wide SEC(".maps");

/* The data path's result: a program that shrinks the byte count NCCL sees. */
SEC("net/send_end")
int bad_net_writes_bytes(struct ncclbpf_net_ctx *c)
{
	c->bytes = 0; /* ERROR E016 */
	return 0;
}

/* A store of an immediate into the reserved word. */
SEC("net/recv_end")
int bad_net_writes_reserved(struct ncclbpf_net_ctx *c)
{
	asm volatile("*(u32 *)(%0 + 100) = 1" ::"r"(c) : "memory"); /* ERROR E016 */
	return 0;
}

/* An atomic add on a context field is a write too. */
SEC("net/send_end")
int bad_net_atomic_on_ctx(struct ncclbpf_net_ctx *c)
{
	__sync_fetch_and_add(&c->posted_bytes, 1); /* ERROR E016 */
	return 0;
}

/* The first byte past the context. */
SEC("net/conn")
int bad_net_reads_past_end(struct ncclbpf_net_ctx *c)
{
	__u64 v;

	asm volatile("%0 = *(u32 *)(%1 + 104)" : "=r"(v) : "r"(c)); /* ERROR E015 */
	return v & 0;
}

/* An offset the program computes from what the network measured. */
SEC("net/send_end")
int bad_net_variable_ctx_offset(struct ncclbpf_net_ctx *c)
{
	__u64 off = c->tag & 0x38;
	__u64 v;

	asm volatile("%0 += %1" : "+r"(c) : "r"(off)); /* ERROR E023 */
	v = c->comm_id;
	return v & 0;
}

/* The context handed to a helper as a value that runs past its end. */
SEC("net/recv_end")
int bad_net_ctx_as_helper_memory(struct ncclbpf_net_ctx *c)
{
	__u32 k = 0;

	bpf_map_update_elem(&wide, &k, (char *)c + 96, BPF_ANY); /* ERROR E020 */
	return 0;
}

/* The context's address stored where the next program (or an operator's
 * map dump) reads it. */
SEC("net/conn")
int bad_net_leaks_ctx_address(struct ncclbpf_net_ctx *c)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&wide, &k);

	if (v)
		*v = (__u64)c; /* ERROR E021 */
	return 0;
}

/* Net hooks return 0: nothing a program returns can steer the transport. */
SEC("net/send_end")
int bad_net_returns_one(struct ncclbpf_net_ctx *c)
{
	return 1; /* ERROR E027 */
}

/* The tuner's helper for the processor number is not a net helper. */
SEC("net/recv_end")
int bad_net_smp_processor_id(struct ncclbpf_net_ctx *c)
{
	return bpf_get_smp_processor_id() & 0; /* ERROR E019 */
}

/* Every field read, in every width the header allows, and the measured
 * duration folded into a per-tag histogram: accepted. */
SEC("net/send_end")
int ok_net_reads_every_field(struct ncclbpf_net_ctx *c)
{
	__u32 k = (__u32)c->tag & 3;
	__u64 *v = bpf_map_lookup_elem(&wide, &k);
	__u64 s = c->comm_id + c->peer_key + c->conn_id + c->bytes + c->posted_bytes + c->start_ns +
		  c->end_ns + c->duration_ns + c->local_seq + c->n + c->dev + c->kind + c->event +
		  c->flags + c->abi_version + c->reserved;

	if (v) {
		__sync_fetch_and_add(&v[0], 1);
		__sync_fetch_and_add(&v[1], s);
	}
	return 0;
}

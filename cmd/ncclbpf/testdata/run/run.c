// SPDX-License-Identifier: MIT
// Test programs for `ncclbpf run` (cmd/ncclbpf/run_test.go). Rebuild with
//   clang-19 -target bpf -mcpu=v3 -O2 -g -I ../../../../include -c run.c -o run.o
#include "ncclbpf.h"

__u64 calls; /* .bss: both programs count their runs here */

struct {
	__uint(type, 27); /* BPF_MAP_TYPE_RINGBUF */
	__uint(max_entries, 4096);
} events SEC(".maps");

/* A program for no hook, called as the conformance format calls programs:
 * r1 = memory, r2 = its length. Returns the sum of the bytes (at most 256),
 * stores its low byte in mem[0]. */
SEC("generic")
__u64 sum_bytes(__u8 *mem, __u64 len)
{
	__u64 s = 0;
	for (__u64 i = 0; i < len && i < 256; i++)
		s += mem[i];
	if (len > 0)
		mem[0] = (__u8)s;
	calls++;
	return s;
}

/* Faults: reads past its memory. */
SEC("generic/oob")
__u64 read_past(__u8 *mem, __u64 len)
{
	return mem[len + 8];
}

/* Faults when unverified: map helpers take pointers. */
SEC("generic/helper")
__u64 use_map(__u8 *mem, __u64 len)
{
	return bpf_ringbuf_output(&events, mem, len, 0);
}

/* For the hook "zz_run" that run_test.go registers: out[i] = in[i] * factor, one
 * bpf_printk line and one ring buffer record {factor, 0, seq} per run. */
struct zz_ctx {
	__u32 factor;  /*  0 read */
	__u32 in[4];   /*  4 read */
	__u32 out[4];  /* 20 read, write */
	__u32 pad;     /* 36 */
	__u64 seq;     /* 40 read */
};

SEC("zz_run")
int scale(struct zz_ctx *c)
{
	c->out[0] = c->in[0] * c->factor;
	c->out[1] = c->in[1] * c->factor;
	c->out[2] = c->in[2] * c->factor;
	c->out[3] = c->in[3] * c->factor;
	bpf_printk("scale: factor %u, seq %llu", c->factor, c->seq);
	struct {
		__u32 factor, pad;
		__u64 seq;
	} ev = {c->factor, 0, c->seq};
	bpf_ringbuf_output(&events, &ev, sizeof ev, 0);
	calls++;
	return c->seq & 0xff;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

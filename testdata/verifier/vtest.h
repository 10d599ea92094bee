/* Shared definitions for the verifier's test corpus.
 *
 * Each .c file holds several programs. A program whose name starts with
 * "bad_" must be rejected, and the line the rejection points at must carry
 * an annotation naming the expected code:  / * ERROR E012 * /  (without the
 * spaces). A program whose name starts with "ok_" must be accepted.
 * verifier_corpus_test.go registers the hooks: "vtest" (every helper,
 * returns 0..255) and "vtest_restricted" (ktime and prandom only, returns
 * -1..1), both with struct vtest_ctx below.
 */
#ifndef VTEST_H
#define VTEST_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct vtest_ctx {
	__u32 op;      /* 0: read */
	__u32 nranks;  /* 4: read */
	__u64 bytes;   /* 8: read */
	__u32 algo;    /* 16: read, write */
	__u32 proto;   /* 20: write only */
	__u64 hidden;  /* 24: not declared to programs */
	__u32 cost[8]; /* 32: read, write */
	__u16 small;   /* 64: read */
	__u16 pad;     /* 66: not declared */
	__u32 flags;   /* 68: read */
};

struct val {
	__u64 hits;
	__u64 bytes;
	__u32 slots[8];
}; /* 48 bytes */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct val);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

#define NOINLINE static __attribute__((noinline))

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#endif

/* SPDX-License-Identifier: MIT */
/*
 * ncclbpf_helpers.h: what a policy needs from libbpf's <bpf/bpf_helpers.h>, for machines without
 * libbpf's headers. ncclbpf.h includes <bpf/bpf_helpers.h> when the compiler finds it, and this file
 * otherwise, so a policy compiles with the headers of `ncclbpf headers DIR` alone:
 *
 *     clang-19 -target bpf -mcpu=v3 -O2 -g -I DIR -c policy.bpf.c -o policy.bpf.o
 *
 * It declares the section and BTF map definition macros and the helpers ncclbpf provides (helper
 * numbers as Linux numbers them; the verifier refuses any other helper).
 */
#ifndef NCCLBPF_HELPERS_H
#define NCCLBPF_HELPERS_H

/* SEC("tuner"), SEC(".maps"), SEC("license"): the ELF section of a program or variable. */
#define SEC(name) __attribute__((section(name), used))

/* BTF map definitions: the value is encoded in the type of a pointer member. */
#define __uint(name, val)  int (*name)[val]
#define __type(name, val)  typeof(val) *name
#define __array(name, val) typeof(val) *name[]

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* The helpers, called through their numbers. */
static void *(*const bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*const bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*const bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*const bpf_ktime_get_ns)(void) = (void *)5;
static long (*const bpf_trace_printk)(const char *fmt, __u32 fmt_size, ...) = (void *)6;
static __u32 (*const bpf_get_prandom_u32)(void) = (void *)7;
static __u32 (*const bpf_get_smp_processor_id)(void) = (void *)8;
static long (*const bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size, __u64 flags) = (void *)130;
static void *(*const bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*const bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;
static void (*const bpf_ringbuf_discard)(void *data, __u64 flags) = (void *)133;

/* bpf_printk("x %d", x): a message of at most three arguments to NCCL's log (rate-limited). */
#define bpf_printk(fmt, ...)                                                   \
	({                                                                     \
		static const char ncclbpf_printk_fmt_[] = fmt;                 \
		bpf_trace_printk(ncclbpf_printk_fmt_, sizeof(ncclbpf_printk_fmt_), \
				 ##__VA_ARGS__);                               \
	})

#endif /* NCCLBPF_HELPERS_H */

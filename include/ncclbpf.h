/* SPDX-License-Identifier: MIT */
/*
 * ncclbpf.h: the policy author's header for ncclbpf.
 *
 * A policy is a C file compiled with
 *
 *     clang -target bpf -mcpu=v3 -O2 -g -I include -c policy.bpf.c -o policy.bpf.o
 *
 * Programs attach by section name, as with libbpf:
 *
 *     SEC("tuner")             int f(struct ncclbpf_tuner_ctx *ctx)   NCCL's getCollInfo
 *     SEC("tuner/chunk_size")  int g(struct ncclbpf_chunk_ctx *ctx)   NCCL's getChunkSize (tuner v6)
 *
 * Maps are BTF-defined (`__uint(type, ...)`, `__type(key, ...)` in SEC(".maps")) and helpers are called
 * by their usual ids; both come from libbpf's <bpf/bpf_helpers.h>, included below when compiling for
 * BPF (or, without libbpf's headers, from ncclbpf_helpers.h next to this file). Tunables are
 * `volatile const` globals (.rodata), set by name at load time
 * (NCCLBPF_POLICY_CONFIG="name=value,...").
 *
 * The same header is included by the host side (the C shim in plugin/, testhost/): without __bpf__
 * it only declares the types and constants.
 *
 * Rank consistency. Every rank of a communicator must take the same algorithm, protocol and channel
 * decision for the same collective, or NCCL hangs or corrupts data. Each input below is marked
 *   __ncclbpf_uniform  the same on every rank of the communicator, or
 *   __ncclbpf_local    possibly different on each rank
 * (ncclbpf_marks.h; outputs are marked __ncclbpf_out, all other members are read-only).
 * A decision computed only from uniform inputs and from map contents that are the same on every
 * rank (e.g. filled from the same configuration file) is rank-consistent. Helpers that read clocks,
 * random numbers or the CPU id are rank-local by nature, and so is a map a profiler program fills
 * with this rank's measurements: to decide on measurements, agree on them first (agreed maps, at
 * the end of this header).
 */
#ifndef NCCLBPF_H
#define NCCLBPF_H

#if defined(__bpf__)
/* The kernel's integer types, spelled as <linux/types.h> spells them (C11 allows the same typedef
 * twice), so that `clang -target bpf` needs no architecture include directory. */
typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u32 __wsum;
/* libbpf's helper declarations where installed (libbpf-dev); else the project's own. */
#if defined(__has_include)
#if __has_include(<bpf/bpf_helpers.h>)
#include <bpf/bpf_helpers.h>
#else
#include "ncclbpf_helpers.h"
#endif
#else
#include <bpf/bpf_helpers.h>
#endif
#else
#include <linux/types.h>
#endif
#include "ncclbpf_marks.h"

/* ---------------------------------------------------------------------------------------------
 * NCCL's numbering (NCCL 2.30 nccl_tuner.h / nccl_common.h). Only the first five collectives
 * ever reach the tuner.
 */
#define NCCLBPF_COLL_BROADCAST     0
#define NCCLBPF_COLL_REDUCE        1
#define NCCLBPF_COLL_ALLGATHER     2
#define NCCLBPF_COLL_REDUCESCATTER 3
#define NCCLBPF_COLL_ALLREDUCE     4
#define NCCLBPF_NUM_COLLS          5

#define NCCLBPF_ALGO_UNDEF          (-1)
#define NCCLBPF_ALGO_TREE           0
#define NCCLBPF_ALGO_RING           1
#define NCCLBPF_ALGO_COLLNET_DIRECT 2
#define NCCLBPF_ALGO_COLLNET_CHAIN  3
#define NCCLBPF_ALGO_NVLS           4
#define NCCLBPF_ALGO_NVLS_TREE      5
#define NCCLBPF_ALGO_PAT            6
#define NCCLBPF_NUM_ALGORITHMS      7

#define NCCLBPF_PROTO_UNDEF  (-1)
#define NCCLBPF_PROTO_LL     0
#define NCCLBPF_PROTO_LL128  1
#define NCCLBPF_PROTO_SIMPLE 2
#define NCCLBPF_NUM_PROTOCOLS 3

/* The most channels NCCL accepts from a tuner (its MAXCHANNELS); larger requests are clamped. */
#define NCCLBPF_MAX_CHANNELS 64

/* Return values of a tuner program. */
#define NCCLBPF_TUNER_APPLY   0 /* apply the outputs written to the context (those left at their
                                   "leave it" values change nothing) */
#define NCCLBPF_TUNER_DEFAULT 1 /* ignore the outputs: NCCL decides everything */

/* The ABI version NCCL loaded (ctx->abi_version). */
#define NCCLBPF_ABI_V2 2
#define NCCLBPF_ABI_V3 3
#define NCCLBPF_ABI_V4 4
#define NCCLBPF_ABI_V5 5
#define NCCLBPF_ABI_V6 6
#define NCCLBPF_ABI_V7 7

/* ---------------------------------------------------------------------------------------------
 * Costs.
 *
 * NCCL estimates the time (µs, a float) of every (algorithm, protocol) and marks unavailable cells
 * with -1.0. eBPF has no floating point, so the context carries the raw IEEE-754 bit pattern of each
 * float as a __u32. For non-negative floats the bit patterns order exactly like the floats, and
 * every negative float (in particular -1.0 = 0xBF800000, "unavailable") has bit 31 set, so compared
 * as unsigned integers it is larger than every available cost. Hence:
 *
 *   - cost[a][p] < cost[b][q]  (unsigned)  <=>  cell (a,p) is cheaper, or (b,q) is unavailable;
 *   - the unsigned minimum over all cells is NCCL's own choice (when any cell is available);
 *   - NCCLBPF_COST_AVAILABLE(c) is true for the cells NCCL may choose.
 *
 * Tuner ABI v2 passes no cost table: there every cell is 0 ("available, cost unknown") except the
 * CollNet rows when NCCL said CollNet is unsupported and the NVLS rows when NVLS is unsupported.
 */
#define NCCLBPF_COST_UNAVAILABLE_BITS 0xBF800000u /* -1.0f */
#define NCCLBPF_COST_AVAILABLE(c)     ((((__u32)(c)) >> 31) == 0)
/* Bit index of cell (a, p) in ncclbpf_tuner_ctx.avail_mask. */
#define NCCLBPF_CELL(a, p)            ((a) * NCCLBPF_NUM_PROTOCOLS + (p))

/* ---------------------------------------------------------------------------------------------
 * The tuner context: r1 of a SEC("tuner") program, once per getCollInfo call.
 *
 * Inputs are read-only; the verifier rejects writes to them. Outputs start at their "leave it to
 * NCCL" values, and the host checks every decision before NCCL sees it: an (algorithm, protocol)
 * cell NCCL marked unavailable is never enabled, channels are clamped to [1, NCCLBPF_MAX_CHANNELS] (and
 * dropped for CollNet, which NCCL does not cap), and a decision NCCL cannot take is counted, logged once.
 *
 * The structure has no pointers, so that the verifier can check every access against this layout;
 * the cost table is copied in (84 bytes) rather than referenced. Offsets are part of the ABI between
 * policies and the host; the verifier's description of this structure (hook/zz_contexts.go) is
 * generated from this header, marks included.
 */
struct ncclbpf_tuner_ctx {
	/* ---- inputs (read-only) ---- */
	__ncclbpf_uniform __u64 comm_id;   /*  0 NCCL's communicator hash (tuner v5+); 0 with v2..v4,
	                                    *    where NCCL passes none. Several communicators of one
	                                    *    process may share it. */
	__ncclbpf_uniform __u64 call_seq;  /*  8 number of earlier getCollInfo calls on this communicator
	                                    *    (0 for the first): ranks issue the same collectives in
	                                    *    the same order */
	__ncclbpf_uniform __u64 n_bytes;   /* 16 bytes of the collective as NCCL counts them (AllGather
	                                    *    and ReduceScatter: the full buffer,
	                                    *    nRanks * count * elementSize) */
	__ncclbpf_uniform __u32 coll_type; /* 24 NCCLBPF_COLL_* */
	__ncclbpf_uniform __s32 num_pipe_ops; /* 28 NCCL's estimate of collective tasks per channel
	                                       *    (usually 1) */
	__ncclbpf_local __s32 reg_buff;    /* 32 1 if the user buffers are registered (or
	                                    *    graph-captured); -1 when the ABI version does not say
	                                    *    (v2, v3) */
	__ncclbpf_uniform __u32 n_ranks;   /* 36 ranks in the communicator */
	__ncclbpf_uniform __u32 n_nodes;   /* 40 nodes spanned by the communicator */
	__ncclbpf_uniform __s32 n_nvl_domains; /* 44 NVLink domains (v5+; NCCL sets it to n_nodes);
	                                        *    -1 before v5 */
	__ncclbpf_uniform __s32 min_ranks_per_nvl_domain; /* 48 v5+; -1 before */
	__ncclbpf_uniform __s32 max_ranks_per_nvl_domain; /* 52 v5+; -1 before */
	__ncclbpf_uniform __u32 abi_version; /* 56 NCCLBPF_ABI_V* (uniform if all ranks run the same
	                                      *    NCCL) */
	__ncclbpf_uniform __u32 avail_mask; /* 60 bit NCCLBPF_CELL(a,p) set iff cost[a][p] is
	                                     *    available: lets a program test a cell chosen at run
	                                     *    time */
	__ncclbpf_uniform __u32 cost[NCCLBPF_NUM_ALGORITHMS][NCCLBPF_NUM_PROTOCOLS];
	                                   /* 64..147 float bits of NCCL's cost table, see "Costs"
	                                    *    above */
	/* ---- outputs (read-write) ---- */
	__ncclbpf_out __ncclbpf_uniform __s32 algorithm; /* 148 NCCLBPF_ALGO_*; NCCLBPF_ALGO_UNDEF (-1)
	                                                  *     = leave it to NCCL */
	__ncclbpf_out __ncclbpf_uniform __s32 protocol;  /* 152 NCCLBPF_PROTO_*; NCCLBPF_PROTO_UNDEF (-1)
	                                                  *     = leave it to NCCL. Setting only one of
	                                                  *     algorithm/protocol restricts NCCL's
	                                                  *     choice to that row/column (not possible
	                                                  *     with tuner v2). */
	__ncclbpf_out __ncclbpf_uniform __s32 n_channels; /* 156 channels to use; 0 = leave it to NCCL */
};

/* ---------------------------------------------------------------------------------------------
 * The chunk-size context: r1 of a SEC("tuner/chunk_size") program, once per getChunkSize call
 * (tuner v6 only; NCCL calls it up to three times per task, with n_channels = 1 and n_bytes the
 * part's size, or once with the whole size for CollNet).
 */
struct ncclbpf_chunk_ctx {
	/* ---- inputs (read-only) ---- */
	__ncclbpf_uniform __u64 comm_id;    /*  0 as in ncclbpf_tuner_ctx */
	__ncclbpf_uniform __u64 call_seq;   /*  8 getCollInfo calls so far on this communicator */
	__ncclbpf_uniform __u64 n_bytes;    /* 16 bytes of this part of the task */
	__ncclbpf_uniform __u64 chunk_size; /* 24 NCCL's chunk size in bytes */
	__ncclbpf_uniform __u32 coll_type;  /* 32 NCCLBPF_COLL_* */
	__ncclbpf_uniform __s32 algorithm;  /* 36 the algorithm NCCL chose */
	__ncclbpf_uniform __s32 protocol;   /* 40 the protocol NCCL chose */
	__ncclbpf_uniform __s32 n_channels; /* 44 */
	__ncclbpf_uniform __u32 n_ranks;    /* 48 */
	__ncclbpf_uniform __u32 n_nodes;    /* 52 */
	/* ---- output (read-write) ---- */
	__ncclbpf_out __ncclbpf_uniform __u64 new_chunk_size;
	                                    /* 56 0 = leave it to NCCL; otherwise at least the
	                                     *    protocol's grain (LL 16, LL128 1920, Simple 512
	                                     *    bytes) and at most 1 GiB, or it is dropped. NCCL
	                                     *    clamps it to its buffer size and rounds it down. */
};

/* ---------------------------------------------------------------------------------------------
 * Agreed maps: state that every rank holds alike, for closed loops that stay rank-consistent.
 *
 * A map declared with NCCLBPF_AGREED (map_flags BPF_F_RDONLY_PROG), array or hash:
 *
 *     struct {
 *         __uint(type, BPF_MAP_TYPE_HASH);
 *         __uint(max_entries, 1024);
 *         __type(key, struct my_key);
 *         __type(value, struct my_stats);
 *         NCCLBPF_AGREED;
 *     } agreed SEC(".maps");
 *
 * - Programs may only read it (the verifier refuses a write or an atomic on it), so loads from it
 *   are rank-uniform: a tuner may decide on them.
 * - Only the control plane writes it, and only at an agreed call sequence: `ncclbpf agree` reads a
 *   rank-local measurement map from every process of the communicator, reduces it element-wise
 *   (sum, mean, min, max) and writes the one result into the agreed map of every process,
 *   activated at the same call_seq N on every rank (`--at-seq N` or `+K`): calls before N see the
 *   old contents, calls from N on the new ones. The switch is the at-seq reload machinery (the
 *   policy is reloaded with new copies of its agreed maps), so NCCL's threads run no Go and take
 *   no lock for it.
 * - A plain `ncclbpf map ... update` of an agreed map is refused unless forced (`--force`: this
 *   process alone, now, at a rank-local moment: ranks may disagree until every one has it).
 * - A reload that keeps an agreed map (same name and definition) keeps its contents.
 *
 * Rank-local measurements go in an ordinary map that profiler programs write; a tuner program must
 * not read that one for its decisions (see "Rank consistency" above). Across nodes, `ncclbpf agree
 * --export` / `--combine` / `--import --at-seq N` give every node the same value at the same
 * absolute N (docs/operators-guide.md).
 */
#define NCCLBPF_F_RDONLY_PROG (1U << 7) /* Linux's BPF_F_RDONLY_PROG */
#define NCCLBPF_F_WRONLY_PROG (1U << 8) /* Linux's BPF_F_WRONLY_PROG */
#if defined(__bpf__)
/* NCCLBPF_AGREED, inside a BTF map definition: the map is agreed (read-only for programs). */
#define NCCLBPF_AGREED __uint(map_flags, BPF_F_RDONLY_PROG)
#endif

/* ---------------------------------------------------------------------------------------------
 * Map types, update flags and map flags, numbered as Linux numbers them, for BTF map definitions
 * and bpf_map_update_elem:
 *
 *     struct {
 *         __uint(type, BPF_MAP_TYPE_ARRAY);
 *         __uint(max_entries, 64);
 *         __type(key, __u32);
 *         __type(value, __u64);
 *     } counts SEC(".maps");
 *     ...
 *     bpf_map_update_elem(&counts, &k, &v, BPF_ANY);
 *
 * libbpf's headers leave these to <linux/bpf.h>, which needs the architecture's include directory
 * (-I /usr/include/x86_64-linux-gnu); a policy needs only this header and libbpf's. A policy that
 * wants <linux/bpf.h> (or a vmlinux.h) anyway includes it before this header, which then uses its
 * definitions (after this header, its enumerators would collide with these macros).
 */
#if defined(__bpf__) && !defined(__LINUX_BPF_H__) && !defined(__VMLINUX_H__)
/* enum bpf_map_type: the types ncclbpf's loader accepts */
#define BPF_MAP_TYPE_HASH            1
#define BPF_MAP_TYPE_ARRAY           2
#define BPF_MAP_TYPE_PERCPU_HASH     5
#define BPF_MAP_TYPE_PERCPU_ARRAY    6
#define BPF_MAP_TYPE_LRU_HASH        9
#define BPF_MAP_TYPE_LRU_PERCPU_HASH 10
#define BPF_MAP_TYPE_RINGBUF         27
/* bpf_map_update_elem's flags */
#define BPF_ANY     0 /* create an element or update an existing one */
#define BPF_NOEXIST 1 /* create an element only if none exists */
#define BPF_EXIST   2 /* update an existing element only */
/* map_flags */
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_F_RDONLY_PROG NCCLBPF_F_RDONLY_PROG
#define BPF_F_WRONLY_PROG NCCLBPF_F_WRONLY_PROG
#endif

#endif /* NCCLBPF_H */

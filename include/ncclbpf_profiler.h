/* SPDX-License-Identifier: MIT */
/*
 * ncclbpf_profiler.h: the profiler hooks of ncclbpf, for policy authors and for the host side.
 *
 * Programs attach by section name:
 *
 *     SEC("profiler/coll_end")      a collective completed (its last kernel channel stopped)
 *     SEC("profiler/p2p_end")       a send or receive completed
 *     SEC("profiler/kernel_ch_end") one channel of a collective/p2p kernel stopped
 *     SEC("profiler/proxy_op_end")  a proxy (network) operation completed, with its steps
 *     SEC("profiler/kernel_phase_end") one barrier phase of a kernel channel stopped (profiler ABI
 *                                   v7, NCCL 2.31+; symmetric-memory kernels only): phase_id says
 *                                   which, gpu_duration_ns its GPU-timer span
 *
 * Each receives a read-only struct ncclbpf_prof_ctx (r1), must return 0, and may call the map
 * helpers, bpf_ktime_get_ns, bpf_get_prandom_u32, the ring buffer helpers and bpf_printk. Maps
 * defined in the same object are the same maps that the bundle's tuner programs see: that is how
 * measurements steer the tuner.
 *
 * When no program of a loaded bundle attaches to a profiler section, ncclbpf asks NCCL for no
 * profiler events at all (activation mask 0): a tuner-only bundle costs nothing on the profiler side.
 * Otherwise it asks for what the programs consume, from the fields the verifier says each reads:
 * collectives or p2p tasks for a coll_end / p2p_end program, and their kernel channels only when
 * that program reads end_ns, duration_ns, gpu_duration_ns or n_children (or a kernel_ch_end or
 * proxy_op_end program is loaded, whose events need their task). A program that reads none of
 * those (a counter) gets its task events only, each completing at its task stop with
 * NCCLBPF_PROF_F_HOST_ONLY; the shim reads no clock for a program that reads no time field.
 * Kernel phases (ncclProfileKernelPhase) are asked for only when a kernel_phase_end program is loaded
 * and NCCL speaks profiler ABI v7: then with collectives and their kernel channels, whose children
 * the phases are (the phase's identity fields are its collective's). Under v1-v6 such a program
 * never runs and changes nothing in the mask.
 * Fields a program does not read may be left 0. A reload changes the mask NCCL reads at its next
 * collective or p2p call (NCCL keeps the mask's address).
 *
 * Times. start_ns/end_ns are host CLOCK_MONOTONIC nanoseconds (the clock of bpf_ktime_get_ns).
 * A collective "ends" when NCCL has stopped its task event and every kernel channel it runs on has
 * stopped (NCCL's task stop only means "enqueued"). gpu_duration_ns comes from the GPU's global timer
 * stamps that NCCL passes with kernel channels (profiler ABI v4 and later); it is 0 when NCCL gave
 * none (ABI v1-v3), in which case NCCLBPF_PROF_F_GPU_TIMED is clear. Where NCCL sends no
 * kernel-channel events (ABI v1/v2; 1-rank communicators, e.g. send/recv to self) a task ends at its
 * task stop, i.e. duration_ns measures enqueueing only, and NCCLBPF_PROF_F_HOST_ONLY is set.
 *
 * Rank consistency: every field is marked __ncclbpf_uniform (the same on every rank of the
 * communicator) or __ncclbpf_local (ncclbpf_marks.h). All measured times are local: a tuner decision
 * derived from them is not rank-consistent by itself (see policies/adaptive/README.md for how to
 * limit the risk).
 *
 * The structure has no pointers; the verifier's description of it (hook/zz_contexts.go) is generated
 * from this header, marks included.
 */
#ifndef NCCLBPF_PROFILER_H
#define NCCLBPF_PROFILER_H

#if defined(__bpf__)
/* As in ncclbpf.h: the kernel's spelling of the integer types, without an architecture include
 * directory (C11 allows the same typedef twice). */
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef unsigned long long __u64;
#else
#include <linux/types.h>
#endif
#include "ncclbpf_marks.h"

/* ctx->event: which hook runs. */
#define NCCLBPF_PROF_COLL_END      1
#define NCCLBPF_PROF_P2P_END       2
#define NCCLBPF_PROF_KERNEL_CH_END 3
#define NCCLBPF_PROF_PROXY_OP_END  4
#define NCCLBPF_PROF_KERNEL_PHASE_END 5
#define NCCLBPF_PROF_NUM_HOOKS     6 /* hook ids are 1..5 */

/* ctx->phase_id (kernel_phase_end): NCCL's phase numbers; -1 in the other hooks. */
#define NCCLBPF_PROF_PHASE_INITIAL_SYNC 0
#define NCCLBPF_PROF_PHASE_COMPUTE      1
#define NCCLBPF_PROF_PHASE_FINAL_SYNC   2

/* ctx->func: NCCL's ncclFunc_t numbering (0..4 are NCCLBPF_COLL_* of ncclbpf.h). */
#define NCCLBPF_PROF_FUNC_BROADCAST     0
#define NCCLBPF_PROF_FUNC_REDUCE        1
#define NCCLBPF_PROF_FUNC_ALLGATHER     2
#define NCCLBPF_PROF_FUNC_REDUCESCATTER 3
#define NCCLBPF_PROF_FUNC_ALLREDUCE     4
#define NCCLBPF_PROF_FUNC_SENDRECV      5
#define NCCLBPF_PROF_FUNC_SEND          6
#define NCCLBPF_PROF_FUNC_RECV          7
#define NCCLBPF_PROF_FUNC_ALLTOALL      8
#define NCCLBPF_PROF_FUNC_UNKNOWN       (-1)

/* ctx->flags */
#define NCCLBPF_PROF_F_GPU_TIMED  0x1 /* gpu_* fields hold GPU timer values */
#define NCCLBPF_PROF_F_HOST_ONLY  0x2 /* no kernel-channel events (ABI v1/v2, 1-rank communicator,
                                         or not asked for: no program reads what they give):
                                         end = task stop, enqueue time only */
#define NCCLBPF_PROF_F_FORCED     0x4 /* completed by reclaim: announced channels never came; the
                                         end is the last time seen for it (may be its start) */
#define NCCLBPF_PROF_F_ORPHAN     0x8 /* kernel_ch/proxy_op whose parent was unknown or gone:
                                         identity fields other than rank/channel are 0/-1 */

struct ncclbpf_prof_ctx {
	/* ---- identity ---- */
	__ncclbpf_uniform __u64 comm_id;        /*   0 NCCL's communicator hash (profiler ABI v4+; 0 before) */
	__ncclbpf_uniform __u64 seq;            /*   8 NCCL's per-communicator, per-function sequence number
	                                         *     of the collective (coll_end and its children); 0 for
	                                         *     p2p */
	__ncclbpf_local __u64 local_seq;        /*  16 events of this hook completed so far on this
	                                         *     communicator context, starting at 0 */
	__ncclbpf_uniform __u64 bytes;          /*  24 count * element size of the collective/p2p (AllGather
	                                         *     and Broadcast: NCCL reports bytes); 0 when the type
	                                         *     is unknown */
	__ncclbpf_local __s32 rank;             /*  32 this rank */
	__ncclbpf_uniform __s32 n_ranks;        /*  36 ranks of the communicator (ABI v4+; 0 before) */
	__ncclbpf_uniform __s32 func;           /*  40 NCCLBPF_PROF_FUNC_* */
	__ncclbpf_uniform __s32 algorithm;      /*  44 NCCLBPF_ALGO_* NCCL used; -1 for p2p or unknown */
	__ncclbpf_uniform __s32 protocol;       /*  48 NCCLBPF_PROTO_*; -1 for p2p or unknown */
	__ncclbpf_uniform __s32 n_channels;     /*  52 channels of the collective/p2p (0 if unknown) */
	__ncclbpf_local __s32 peer;             /*  56 p2p/proxy peer rank; -1 otherwise */
	__ncclbpf_local __s32 channel_id;       /*  60 kernel channel / proxy channel; -1 otherwise */
	/* ---- measurements ---- */
	__ncclbpf_local __u64 start_ns;         /*  64 host CLOCK_MONOTONIC at the start event */
	__ncclbpf_local __u64 end_ns;           /*  72 host CLOCK_MONOTONIC at completion */
	__ncclbpf_local __u64 duration_ns;      /*  80 end_ns - start_ns */
	__ncclbpf_local __u64 gpu_duration_ns;  /*  88 GPU timer span (max stop - min start over the kernel
	                                         *     channels; one channel for kernel_ch_end); 0 if none */
	__ncclbpf_local __u64 xfer_bytes;       /*  96 proxy_op_end: bytes the steps reported transferred */
	__ncclbpf_local __s32 n_children;       /* 104 kernel channels (coll/p2p) or steps (proxy op) that
	                                         *     completed under this event */
	__ncclbpf_local __s32 is_send;          /* 108 proxy_op_end: 1 send side, 0 receive; -1 otherwise */
	__ncclbpf_uniform __u32 event;          /* 112 NCCLBPF_PROF_* hook id */
	__ncclbpf_local __u32 flags;            /* 116 NCCLBPF_PROF_F_* */
	__ncclbpf_uniform __u32 abi_version;    /* 120 profiler ABI 1..7 (uniform if all ranks run the same
	                                         *     NCCL) */
	__ncclbpf_uniform __u32 reserved;       /* 124 always 0 */
	/* ---- profiler ABI v7 (NCCL 2.31+); 0 before ---- */
	__ncclbpf_local __u64 user_tag;         /* 128 the application's tag of the call (ncclCollConfig_t's
	                                         *     userProfilerTag; 0 = untagged): the same on every
	                                         *     rank only if the application makes it so, hence local
	                                         *     (a training phase, a layer) */
	__ncclbpf_uniform __u32 kernel_variant; /* 136 ncclbpf_prof_variant_hash of the name of the kernel
	                                         *     variant NCCL ran for the collective; 0 = not given */
	__ncclbpf_uniform __u32 is_sym_coll;    /* 140 1: the collective ran as a symmetric-memory kernel */
	__ncclbpf_uniform __s32 phase_id;       /* 144 kernel_phase_end: NCCLBPF_PROF_PHASE_*, which phase
	                                         *     of the kernel (every rank runs the same phases); -1
	                                         *     in other hooks */
	__ncclbpf_uniform __u32 reserved2;      /* 148 always 0 */
};

/* ncclbpf_prof_variant_hash is the kernel_variant value of a variant name: FNV-1a, 32 bits (0 is
 * never produced: a name hashing to 0 gives 1). Usable in policies on constant strings. */
static inline __attribute__((always_inline)) __u32 ncclbpf_prof_variant_hash(const char *s)
{
	__u32 h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (__u8)*s) * 16777619u;
	return h ? h : 1;
}

/* ncclbpf_prof_latency_ns is the best measured latency of the event: the GPU span when NCCL gave
 * GPU timers, else the host time. Written so that the compiler loads both fields from constant
 * offsets (the verifier lets the context pointer move by constants only; `flags ? a : b` tends to
 * become a load from a computed offset). */
static inline __attribute__((always_inline)) __u64 ncclbpf_prof_latency_ns(const struct ncclbpf_prof_ctx *ctx)
{
	__u64 ns = ctx->gpu_duration_ns; /* 0 unless NCCLBPF_PROF_F_GPU_TIMED */
	if (!ns)
		ns = ctx->duration_ns;
	return ns;
}

#endif /* NCCLBPF_PROFILER_H */

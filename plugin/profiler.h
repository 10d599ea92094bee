/* SPDX-License-Identifier: MIT */
/*
 * profiler.h: the profiler side of libncclbpf.so, as the Go control plane (and the test host) sees it.
 *
 * The shim (profiler.c, profiler_events.c, profiler_abi.c) exports ncclProfiler_v7 .. ncclProfiler_v1
 * and does all event bookkeeping in C: no Go, no lock and no allocation on NCCL's threads. Policies
 * run through one slot per profiler hook; a slot holds the entry point of a compiled program
 * (`uint64_t fn(void *ctx)`, System V ABI, what vm.NativeExecutable.Entry returns) and is swapped
 * atomically.
 *
 * Publishing a bundle (from Go, off the hot path):
 *
 *     for each profiler hook h:  old[h] = ncclbpf_prof_publish_record(h, &record);  // shim.h
 *     ncclbpf_prof_refresh_mask();              // NCCL's activation mask follows the new programs
 *     ncclbpf_prof_synchronize() == 0           // => the old code may be unmapped
 */
#ifndef NCCLBPF_PLUGIN_PROFILER_H
#define NCCLBPF_PLUGIN_PROFILER_H

#include <stdint.h>
#include "shim.h" /* struct nb_published */

/* Hook ids: NCCLBPF_PROF_COLL_END (1) .. NCCLBPF_PROF_KERNEL_PHASE_END (5) of include/ncclbpf_profiler.h. */
#define NCCLBPF_PROF_FIRST_HOOK 1
#define NCCLBPF_PROF_LAST_HOOK 5

/* ncclbpf_prof_hook_id returns the id of a hook name ("profiler/coll_end", ...) or -1. */
int ncclbpf_prof_hook_id(const char *name);

/* ncclbpf_prof_publish makes fn (a `uint64_t fn(void *ctx)` entry; 0: no program) the code that
 * hook runs from the next event on, and returns the previous entry (0 if none or hook out of range).
 * The previous code may still run on other threads until ncclbpf_prof_synchronize returns 0. */
uintptr_t ncclbpf_prof_publish(int hook, uintptr_t fn);

/* What a hook's program reads of struct ncclbpf_prof_ctx, as far as it costs the shim work (the
 * verifier lists the context fields each program reads). The shim skips the rest: no clock read
 * for a program that reads no time, no kernel-channel or proxy-step events (activation mask) for a
 * program that needs no completion time, GPU span or children; the fields it did not fill are 0.
 * ncclbpf_prof_publish assumes NCCLBPF_PROF_NEED_ALL. */
#define NCCLBPF_PROF_NEED_START    0x1 /* start_ns or duration_ns */
#define NCCLBPF_PROF_NEED_END      0x2 /* end_ns or duration_ns: the event's true completion time */
#define NCCLBPF_PROF_NEED_CHILDREN 0x4 /* gpu_duration_ns, n_children, xfer_bytes (and the GPU_TIMED
                                          flag): a task's kernel channels, a proxy op's steps */
#define NCCLBPF_PROF_NEED_SEQ      0x8 /* local_seq */
#define NCCLBPF_PROF_NEED_ALL      0xf

/* ncclbpf_prof_publish_needs is ncclbpf_prof_publish for a program that reads only what needs
 * (NCCLBPF_PROF_NEED_* bits) says. */
uintptr_t ncclbpf_prof_publish_needs(int hook, uintptr_t fn, uint32_t needs);

/* ncclbpf_prof_publish_record is ncclbpf_prof_publish_needs for the record of the program (r->entry,
 * with r->fill as its needs); NULL: no program. */
uintptr_t ncclbpf_prof_publish_record(int hook, const struct nb_published *r);

/* ncclbpf_prof_needs returns the NCCLBPF_PROF_NEED_* bits published with hook's program (0: none). */
uint32_t ncclbpf_prof_needs(int hook);

/* ncclbpf_prof_synchronize waits until no thread still runs profiler code published before the call
 * (the grace period of plugin/slot.c, over the profiler's calling threads). Returns 0 when that is
 * guaranteed, -1 when it cannot be (no membarrier): then old code must never be freed. */
int ncclbpf_prof_synchronize(void);

/* ncclbpf_prof_wanted_mask is the activation mask the programs now published need under profiler
 * ABI version (1..7): 0 when no profiler program is published. Kernel phases only under v7, and only
 * for a kernel_phase_end program. */
int ncclbpf_prof_wanted_mask(int version);

/* ncclbpf_prof_refresh_mask stores ncclbpf_prof_wanted_mask into NCCL's activation mask (when an
 * init has given us its address) and returns the value stored, or -1 if NCCL has not called init.
 * NCCL keeps that address (one process-wide int) and reads it at each collective/p2p call, so a
 * reload's new mask applies from the next NCCL call on, on every communicator. */
int ncclbpf_prof_refresh_mask(void);

/* Counters, process-wide, for the control plane ("watch"). */
struct ncclbpf_prof_stats {
	uint64_t calls[NCCLBPF_PROF_LAST_HOOK + 1]; /* program calls per hook id */
	uint64_t events_dropped;                    /* events refused: pool empty even after reclaim */
	uint64_t events_forced;                     /* events completed by reclaim (children missing) */
	uint64_t orphans;                           /* children whose parent was unknown or gone */
	uint64_t contexts;                          /* live per-communicator contexts */
	int version;                                /* profiler ABI version NCCL uses (0: none yet) */
	int mask;                                   /* the activation mask last stored */
};
void ncclbpf_prof_get_stats(struct ncclbpf_prof_stats *out);

#endif /* NCCLBPF_PLUGIN_PROFILER_H */

/* SPDX-License-Identifier: MIT */
/*
 * shim.h: declarations shared by the C shim (tuner.c, slot.c; struct nb_published: every shim) and
 * the Go side of libncclbpf.so.
 * Declarations only: cgo files that //export functions may only have declarations in their preamble.
 */
#ifndef NCCLBPF_SHIM_H
#define NCCLBPF_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* A compiled program's native entry: `uint64_t fn(void *ctx)` (System V). */
typedef uint64_t (*ncclbpf_prog_fn)(void *ctx);

/*
 * What a published program needs from the shim that runs it, one record for every hook: made by
 * the Go side from the verifier's result (publishedRecord, plugin/published.go) and handed to the
 * shim's publish call, which keeps what its hot path reads in its own form (the tuner: one slot
 * word, ncclbpf_slot_word; the profiler and the net wrapper: the fill groups beside the entry).
 */
struct nb_published {
	uintptr_t entry; /* the compiled program's native entry (ncclbpf_prog_fn); 0: no program */
	uint32_t hints;  /* tuner hook: NCCLBPF_SLOT_SKIP_COST | _SKIP_MASK | _NO_DECISION; 0 elsewhere */
	uint32_t fill;   /* the context fields the shim fills, in its groups: profiler hooks
	                    NCCLBPF_PROF_NEED_* (profiler.h), net hooks NCCLBPF_NET_R_* (net.h); 0 elsewhere */
};

/* Hook slots: one per attachment point the shim calls. */
enum {
	NCCLBPF_SLOT_TUNER = 0,      /* hook "tuner" */
	NCCLBPF_SLOT_CHUNK_SIZE = 1, /* hook "tuner/chunk_size" */
	NCCLBPF_NUM_SLOTS = 2,
};

/*
 * Hints published with a tuner entry, in the low bits of the slot word (entries are at least
 * 8-byte aligned), each a fact the verifier proved about the program: SKIP_COST and SKIP_MASK, it
 * never reads these inputs, so the shim does not fill them; NO_DECISION, it never writes
 * algorithm, protocol or n_channels, so every call is left to NCCL whatever it returns, and the
 * shim neither resets nor reads those outputs.
 */
#define NCCLBPF_SLOT_SKIP_COST ((uintptr_t)1)   /* cost[][] (the 84-byte copy) */
#define NCCLBPF_SLOT_SKIP_MASK ((uintptr_t)2)   /* avail_mask */
#define NCCLBPF_SLOT_NO_DECISION ((uintptr_t)4) /* algorithm, protocol, n_channels never written */
#define NCCLBPF_SLOT_FLAGS ((uintptr_t)7)

/*
 * ncclbpf_slot_word is the tuner slot word of r: its entry with its hints in the low bits, or 0 (no
 * program) when the entry is not 8-byte aligned (the Go side refuses such a program first).
 */
uintptr_t ncclbpf_slot_word(const struct nb_published *r);

/*
 * ncclbpf_slot_publish makes fn (NULL: no program) the code that slot runs from the next call on
 * and returns the previous one. The previous code may still be running on other threads until
 * ncclbpf_slot_synchronize returns 0.
 */
uintptr_t ncclbpf_slot_publish(int slot, uintptr_t fn); /* fn may carry NCCLBPF_SLOT_SKIP_* bits */

/*
 * ncclbpf_slot_synchronize waits until no thread is still inside code that was published before
 * the call (a grace period). It returns 0 when that is guaranteed, -1 when it cannot be (the
 * kernel lacks membarrier): then old code must never be freed.
 */
int ncclbpf_slot_synchronize(void);

/* Counters of the tuner shim, summed over all communicators (live and finalized). */
struct ncclbpf_tuner_stats {
	uint64_t comms_live;     /* communicators between init and finalize */
	uint64_t comms_total;    /* init calls so far */
	uint64_t calls;          /* getCollInfo calls */
	uint64_t policy_calls;   /* ... that ran a program */
	uint64_t applied;        /* decisions applied (something changed for NCCL) */
	uint64_t rejected;       /* decisions NCCL could not take: dropped */
	uint64_t clamped;        /* channel counts clamped to [1, NCCLBPF_MAX_CHANNELS], or dropped (CollNet) */
	uint64_t chunk_calls;    /* getChunkSize calls */
	uint64_t chunk_applied;  /* chunk sizes changed */
	uint64_t chunk_rejected; /* chunk sizes dropped */
	int32_t load_status;     /* 0 loaded, 1 no policy (NCCLBPF_POLICY=none), <0 failed, 2 not yet */
	int32_t reserved;
};

/* ncclbpf_tuner_get_stats fills *out; it takes the registry lock (not for the hot path). */
void ncclbpf_tuner_get_stats(struct ncclbpf_tuner_stats *out);

/* ncclbpf_load_message returns the message of the policy load ("" before the first init). */
const char *ncclbpf_load_message(void);

/*
 * ncclbpf_ensure_loaded loads the policy if no init has yet (once per process; the profiler's init,
 * which NCCL runs before the tuner's, calls it so that its programs are published in time). The
 * outcome is reported through NCCL's logger by the first tuner init.
 */
void ncclbpf_ensure_loaded(void);

/*
 * ncclbpf_printk_sink returns the address of a `void fn(void *ctx, const char *line, uint32_t len)`
 * (package maps' log sink) that passes bpf_printk lines to NCCL's logger (INFO, NCCL_TUNING) of
 * the first communicator.
 */
uintptr_t ncclbpf_printk_sink(void);

/*
 * ncclbpf_testing_set_program installs a native C function as the program of a slot, for tests and
 * benchmarks of the shim without the eBPF pipeline. It runs the policy load first (as the first
 * init would) so that the load does not overwrite it afterwards. Only in test builds
 * (-tags ncclbpf_testing, testing.c): the production library does not export it.
 */
void ncclbpf_testing_set_program(int slot, uintptr_t fn);

#endif /* NCCLBPF_SHIM_H */

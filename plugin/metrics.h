/* SPDX-License-Identifier: MIT */
/*
 * metrics.h: what the exporter reads from a process (declarations only, for cgo). The hot-path side
 * is metrics_fold.h (tuner) and profiler_events.c (latency).
 *
 * Decision counts: every getCollInfo call that runs a program counts one decision in its
 * communicator's table, keyed by (collective, size bucket, outcome cell, channels, whether the cell
 * is costlier than NCCL's cheapest available one). The table is open-addressed with NCCLBPF_DTAB_N
 * entries and written by the communicator's owner thread alone (plain loads and stores, no
 * read-modify-write, no lock); a key that finds no free entry within a few probes is counted in
 * overflow instead.
 *
 * Latency: every collective task the profiler completes adds its latency (the GPU span when NCCL
 * gave GPU timestamps, else the host span) to a histogram of its context keyed by (user tag,
 * collective, size bucket, algorithm, protocol); several threads may complete tasks of one context, so
 * these counts are relaxed atomic additions, one entry per cache-line group.
 *
 * The user tag is what the application gave the call (ncclCollConfig_t's userProfilerTag, profiler
 * ABI v7; 0: none, and always 0 before v7). A context keeps at most NCCLBPF_LAT_TAGS distinct tags, in
 * the order they come; a tagged task whose tag finds no room is counted under the tag "other" (key
 * with other_tag set), as is one whose tagged histogram would take more than NCCLBPF_LAT_TAGGED_N
 * entries of the table: tagged traffic never takes the whole table from the untagged histograms.
 * A task that finds no entry at all is counted in overflow.
 *
 * Size bucket b (0..NCCLBPF_SIZE_BUCKETS-1) holds sizes in (2^(b-1), 2^b] bytes (b = 0: 0 or 1 byte;
 * the last bucket: everything above). Latency bucket i (0..NCCLBPF_LAT_BUCKETS-1) holds latencies
 * <= 2^(i+NCCLBPF_LAT_MIN_LOG2) ns; the last one everything above.
 */
#ifndef NCCLBPF_METRICS_H
#define NCCLBPF_METRICS_H

#include <stdint.h>

#define NCCLBPF_DTAB_N 512
#define NCCLBPF_SIZE_BUCKETS 48
#define NCCLBPF_LAT_TAB_N 128
#define NCCLBPF_LAT_BUCKETS 30
#define NCCLBPF_LAT_MIN_LOG2 10
#define NCCLBPF_LAT_TAGS 16     /* distinct user tags per profiler context */
#define NCCLBPF_LAT_TAGGED_N 48 /* entries of a context's table that tagged histograms may take */

/* Outcome cells beyond the 21 (algorithm * 3 + protocol) cells of a full decision. */
#define NCCLBPF_CELL_DEFAULT 21 /* the program returned DEFAULT or left everything to NCCL */
#define NCCLBPF_CELL_PARTIAL 22 /* algorithm or protocol only: NCCL restricted to a row or column */
#define NCCLBPF_CELL_REFUSED 23 /* the guardrail dropped the decision */
#define NCCLBPF_CELL_CHANNELS 24 /* channels only: algorithm and protocol left to NCCL */

/* A per-communicator summary of the tuner. */
struct ncclbpf_comm_counters {
	uint64_t comm_id;
	uint64_t calls, policy_calls, applied, rejected, clamped, chunk_calls, chunk_applied, chunk_rejected;
	uint64_t overflow; /* decisions that found no entry in the table */
	uint32_t n_ranks, n_nodes;
	uint32_t first;    /* index of the communicator's first row in the decision rows */
	uint32_t n;        /* its rows */
};

/* One decision row. */
struct ncclbpf_decision_count {
	uint64_t count;
	uint8_t coll, size_bucket, cell, channels; /* channels saturated to 255 */
	uint8_t differs, pad[3];
};

/*
 * ncclbpf_metrics_decisions copies up to max_comms live communicators' counters into comms and up to
 * max_rows decision rows into rows (a communicator whose rows do not fit gets n = 0 and is still
 * listed); returns the number of communicators copied, *live the number live. Takes the registry
 * lock; NCCL's threads are only read.
 */
int ncclbpf_metrics_decisions(struct ncclbpf_comm_counters *comms, int max_comms, struct ncclbpf_decision_count *rows,
                              int max_rows, int *live);

/* One latency histogram. */
struct ncclbpf_latency_hist {
	uint64_t comm_id;
	int32_t rank, coll, size_bucket, algo, proto;
	int32_t other_tag;  /* 1: tasks whose tag found no room (user_tag then 0) */
	uint64_t user_tag;  /* the application's tag (profiler ABI v7); 0: untagged */
	uint64_t count, sum_ns;
	uint64_t buckets[NCCLBPF_LAT_BUCKETS]; /* not cumulative */
};

/*
 * ncclbpf_metrics_latency copies up to max histograms of the live profiler contexts into out and
 * returns how many it copied; *overflow gets the tasks that found no entry (over all contexts).
 */
int ncclbpf_metrics_latency(struct ncclbpf_latency_hist *out, int max, uint64_t *overflow);

/* ncclbpf_metrics_latency_enabled says whether the profiler asks NCCL for collective events for the
 * latency histograms even without a profiler program (NCCLBPF_LATENCY, read at the first init). */
int ncclbpf_metrics_latency_enabled(void);

/* ncclbpf_size_bucket is the size bucket of n bytes. */
static inline uint32_t ncclbpf_size_bucket(uint64_t n) {
	uint32_t b = n <= 1 ? 0 : 64 - (uint32_t)__builtin_clzll(n - 1);
	return b < NCCLBPF_SIZE_BUCKETS ? b : NCCLBPF_SIZE_BUCKETS - 1;
}

#endif /* NCCLBPF_METRICS_H */

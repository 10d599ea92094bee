/* SPDX-License-Identifier: MIT */
/*
 * decisions.h: the decision record of each communicator (a rolling digest of every tuner decision
 * and a ring of the last NCCLBPF_DECISION_RING), as the control plane reads it. Declarations only
 * (cgo preambles). The hot-path side is decisions_fold.h.
 *
 * Every getCollInfo call whose program makes a decision adds a hash of (seq, collective, bytes,
 * algorithm, protocol, channels) to the communicator's digest and writes the same into
 * ring[seq % RING]; a call left to NCCL adds nothing (every rank gets NCCL's own choice there) and
 * is only counted (metrics.h). The getChunkSize call that follows, when a chunk program runs, adds
 * a hash of its chunk size to the digest and writes it into the record of seq - 1 (the collective
 * it belongs to), recording that collective as left to NCCL if it had no record. record.digest is the digest after that decision, chunk
 * size included: two ranks whose digests at seq N are equal decided alike on every call up to N
 * (up to hash collisions), so ranks at different progress can still be compared.
 */
#ifndef NCCLBPF_DECISIONS_H
#define NCCLBPF_DECISIONS_H

#include <stdint.h>

#define NCCLBPF_DECISION_RING 256

/* A decision as the control plane sees it. algorithm/protocol -1 and channels 0 stand for "left to
 * NCCL"; chunk 0: no chunk size set (or no getChunkSize call yet). The ring keeps algorithm and
 * protocol as 8-bit values, channels saturated to 255 (a negative count shows as 255) and not the
 * collective's size; the digest covers every value, the size included, in full. */
struct ncclbpf_decision {
	uint64_t seq;
	uint64_t chunk;
	uint64_t digest;
	int32_t coll, algorithm, protocol, channels;
};

/* One live communicator's record: the last n decisions, oldest first. */
struct ncclbpf_comm_decisions {
	uint64_t comm_id;
	uint32_t n_ranks, n_nodes;
	uint64_t seq;    /* getCollInfo calls so far */
	uint64_t digest; /* digest after the last recorded decision */
	uint64_t kept_from; /* the first call covered: a call from here on missing from ring was left to NCCL */
	uint32_t n;      /* valid entries of ring */
	uint32_t pad;
	struct ncclbpf_decision ring[NCCLBPF_DECISION_RING];
};

/*
 * ncclbpf_decisions_snapshot copies the records of up to max live communicators into out (in
 * registry order) and returns how many it copied; *live gets how many are live. Entries being
 * rewritten while it reads are left out (seqlock check). Takes the registry lock (not for the hot
 * path).
 */
int ncclbpf_decisions_snapshot(struct ncclbpf_comm_decisions *out, int max, int *live);

#endif /* NCCLBPF_DECISIONS_H */

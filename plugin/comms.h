/* SPDX-License-Identifier: MIT */
/* comms.h: the live communicators, for the control plane (slot.c). Declarations only. */
#ifndef NCCLBPF_COMMS_H
#define NCCLBPF_COMMS_H

#include <stdint.h>

struct ncclbpf_comm_info {
	uint64_t comm_id;
	uint64_t seq; /* getCollInfo calls so far */
	uint32_t n_ranks, n_nodes;
};

/*
 * ncclbpf_comms_list stores up to max live communicators in out and returns how many are live
 * (possibly more than max). Takes the registry lock.
 */
int ncclbpf_comms_list(struct ncclbpf_comm_info *out, int max);

#endif /* NCCLBPF_COMMS_H */

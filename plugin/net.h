/* SPDX-License-Identifier: MIT */
/*
 * net.h: the net side of libncclbpf.so as the Go control plane and the test hosts see it.
 *
 * The shim (net.c) exports ncclNetPlugin_v8 to _v12 and passes every call to the net plugin named by
 * NCCLBPF_NET_PLUGIN (which may export v6 to v12). Programs of the hooks net/conn, net/send_end and net/recv_end run
 * through one slot per hook, published and retired like the profiler's (profiler.h):
 *
 *     for each net hook h:  old[h] = ncclbpf_net_publish(h, &record);  // shim.h; NULL: none
 *     ncclbpf_net_synchronize() == 0           // => the old code may be unmapped
 */
#ifndef NCCLBPF_PLUGIN_NET_H
#define NCCLBPF_PLUGIN_NET_H

#include <stdint.h>
#include "shim.h" /* struct nb_published */

/* Hook ids: NCCLBPF_NET_CONN (1) .. NCCLBPF_NET_RECV_END (3) of include/ncclbpf_net.h. */
#define NCCLBPF_NET_FIRST_HOOK 1
#define NCCLBPF_NET_LAST_HOOK 3

/* ncclbpf_net_hook_id returns the id of a hook name ("net/conn", ...) or -1. */
int ncclbpf_net_hook_id(const char *name);

/* The context fields a completion fills, in groups (the record's fill): a program gets
 * every field it reads, as the verifier lists them, and the wrapper computes nothing else. */
#define NCCLBPF_NET_R_IDS 0x01    /* comm_id, peer_key, conn_id, dev */
#define NCCLBPF_NET_R_BYTES 0x02  /* bytes */
#define NCCLBPF_NET_R_POSTED 0x04 /* posted_bytes */
#define NCCLBPF_NET_R_TIMES 0x08  /* start_ns, end_ns, duration_ns: requests are timed (two clock reads) */
#define NCCLBPF_NET_R_FLAGS 0x10  /* flags */
#define NCCLBPF_NET_R_REQ 0x20    /* tag, n */
#define NCCLBPF_NET_R_CONST 0x40  /* kind, event, abi_version, reserved */
#define NCCLBPF_NET_R_SEQ 0x80    /* local_seq */
#define NCCLBPF_NET_R_ALL 0xff

/* ncclbpf_net_publish makes r's program (r->entry; NULL or 0: none) the code hook runs from the next
 * event on and returns the previous entry (0 if none or hook out of range). r->fill (NCCLBPF_NET_R_*)
 * are the context fields the program reads: only those are filled, and requests are timed (two
 * cycle-counter reads) only for a program that reads the times. */
uintptr_t ncclbpf_net_publish(int hook, const struct nb_published *r);

/* ncclbpf_net_synchronize waits until no thread still runs net code published before the call.
 * Returns 0 when that is guaranteed, -1 when it cannot be (no membarrier). */
int ncclbpf_net_synchronize(void);

/* Counters, process-wide (summed over the calling threads; not for the hot path). */
struct ncclbpf_net_stats {
	uint64_t calls[NCCLBPF_NET_LAST_HOOK + 1]; /* program runs per hook id */
	uint64_t sends, recvs;                     /* completions seen by test */
	uint64_t untracked;   /* requests the table could not hold: completed without a record */
	uint64_t conns;       /* connections set up (listen, connect, accept) */
	uint64_t inflight;    /* requests in the table now */
	int outer_version;    /* net ABI NCCL uses (0: no init yet) */
	int inner_version;    /* net ABI of the wrapped plugin (0: none loaded) */
	int inner_status;     /* 0 loaded, 1 not configured, -1 failed */
	int shared_threads;   /* threads that found no request table of their own (more than 32 alive) */
	uint32_t fill[NCCLBPF_NET_LAST_HOOK + 1]; /* context fields each hook's completions fill (NCCLBPF_NET_R_*) */
};
void ncclbpf_net_get_stats(struct ncclbpf_net_stats *out);

/* ncclbpf_net_inner_message describes the wrapped plugin's load ("" before any attempt). */
const char *ncclbpf_net_inner_message(void);

#endif /* NCCLBPF_PLUGIN_NET_H */

/* SPDX-License-Identifier: MIT */
/*
 * net_internal.h: what the three files of the net wrapper share, private to them.
 *
 *   net.c          watching: the hook slots, the connection and request tables, the data path, statistics
 *   net_inner.c    the inner (wrapped) plugin: its load, its init, the calls passed to it unchanged
 *   net_exports.c  the exported tables ncclNetPlugin_v8.._v12 and their per-version entry points
 *
 * The data path's first step (isend and irecv without a program: a slot load and a jump to the inner
 * plugin) is static inline here, so that every exported table's entry point, whatever its version,
 * runs it without a call of its own. Everything declared here is hidden: nothing of it is exported.
 */
#ifndef NCCLBPF_PLUGIN_NET_INTERNAL_H
#define NCCLBPF_PLUGIN_NET_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include "../include/ncclbpf_net.h"
#include "net.h"
#include "net_abi.h"

#define NBN_HIDDEN __attribute__((visibility("hidden")))
#define NBN_EXPORT __attribute__((visibility("default")))
#define NBN_LOG_WARN 2
#define NBN_LOG_INFO 3
#define NBN_SUBSYS (0x1 | 0x10) /* NCCL_INIT | NCCL_NET */

/* A hook's slot (net.c): its program and what the data path fills for it. */
struct nbn_slot {
	_Alignas(64) _Atomic(uintptr_t) fn;
	/* fill (bits 0-7): the context fields the data path fills for fn (NCCLBPF_NET_R_*): every field
	 * the program reads, as the verifier lists them; reads (8-15): what the published program reads;
	 * bits 16-: a generation, odd while a publish is under way. A publish widens fill to old | new
	 * before it stores fn; a grace period that no publish overlapped narrows it to reads
	 * (ncclbpf_net_synchronize). A thread that loaded fn inside its bracket therefore always fills at
	 * least what fn reads. One word, so that a narrowing and a publish cannot interleave. */
	_Atomic uint64_t word;
};
extern struct nbn_slot g_nbn_slots[NCCLBPF_NET_LAST_HOOK + 1] NBN_HIDDEN;
extern _Atomic int g_nbn_outer_version NBN_HIDDEN; /* net ABI NCCL called init with (0: none yet) */

/* The inner plugin (net_inner.c), seen as v10 (or v11/v12, whose tables extend v10's). */
union nbn_inner {
	struct nbn_net_v10 v10;
	struct nbn_net_v11 v11;
};
extern union nbn_inner g_nbn_in NBN_HIDDEN;
extern int g_nbn_in_version NBN_HIDDEN; /* 6 to 12; 0 none */
extern int g_nbn_in_status NBN_HIDDEN;  /* 0 loaded, 1 not configured, -1 failed, 2 not yet */
extern void *g_nbn_in_ctx10 NBN_HIDDEN; /* outer v8..v10 over an inner v11/v12: the process-wide inner context */

/* Per-communicator context of the v11/v12 ABI. */
struct nbn_ctx {
	void *inner;                   /* the inner plugin's context (inner v11+) */
	uint64_t comm_id;
	struct nbn_comm_config config; /* for an inner v10's connect */
};

/* The exported tables (net_exports.c). */
extern struct nbn_net_v10 ncclNetPlugin_v10;
extern struct nbn_net_v11 ncclNetPlugin_v11, ncclNetPlugin_v12;
extern struct nbn_net_old ncclNetPlugin_v9, ncclNetPlugin_v8;

/* ---- net.c ---- */

/* nbn_requests_ready makes the request tables once (at the first init) and reports whether they
 * could be mapped; *tables and *entries get their number and the entries of each. */
int nbn_requests_ready(int *tables, size_t *entries) NBN_HIDDEN;
/* listen and connect on the inner plugin (ictx: its context, NULL below v11), recording the
 * connection and running net/conn's program. */
nbn_result_t nbn_listen(void *ictx, uint64_t comm_id, int dev, void *handle, void **listenComm) NBN_HIDDEN;
nbn_result_t nbn_connect(void *ictx, struct nbn_comm_config *cfg, uint64_t comm_id, int dev, void *handle,
                         void **sendComm, struct nbn_dev_handle **sendDevComm) NBN_HIDDEN;
nbn_result_t w_accept(void *listenComm, void **recvComm, struct nbn_dev_handle **recvDevComm) NBN_HIDDEN;
nbn_result_t w_isend_watched(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                             void **request) NBN_HIDDEN;
nbn_result_t w_irecv_watched(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                             void **phandles, void **request) NBN_HIDDEN;
nbn_result_t w_test(void *request, int *done, int *sizes) NBN_HIDDEN;
nbn_result_t w_closeSend(void *sendComm) NBN_HIDDEN;
nbn_result_t w_closeRecv(void *recvComm) NBN_HIDDEN;
nbn_result_t w_closeListen(void *listenComm) NBN_HIDDEN;

/* ---- net_inner.c ---- */

/* nbn_init_comm is the init of the ABIs with a per-communicator context (outer v11, v12);
 * nbn_init_process that of those without one (outer v8..v10): the inner plugin is initialized once
 * per process. outer: the caller's net ABI. */
nbn_result_t nbn_init_comm(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
                           nbn_prof_cb_t prof, int outer) NBN_HIDDEN;
nbn_result_t nbn_init_process(nbn_logger_t log, nbn_prof_cb_t prof, int outer) NBN_HIDDEN;
/* nbn_inner_props reads the inner plugin's properties of dev into the widest structure (v12's). */
nbn_result_t nbn_inner_props(int dev, struct nbn_props_v12 *c) NBN_HIDDEN;
nbn_result_t w_finalize(void *ctx) NBN_HIDDEN;
nbn_result_t w_set_net_attr(void *ctx, struct nbn_net_attr *attr) NBN_HIDDEN;
nbn_result_t w_devices(int *ndev) NBN_HIDDEN;
nbn_result_t w_regMr(void *comm, void *data, size_t size, int type, void **mhandle) NBN_HIDDEN;
nbn_result_t w_regMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                           void **mhandle) NBN_HIDDEN;
nbn_result_t w_deregMr(void *comm, void *mhandle) NBN_HIDDEN;
nbn_result_t w_iflush(void *recvComm, int n, void *data[], int *sizes, void **mhandles, void **request) NBN_HIDDEN;
nbn_result_t w_getDeviceMr(void *comm, void *mhandle, void **dptr) NBN_HIDDEN;
nbn_result_t w_irecvConsumed(void *recvComm, int n, void *request) NBN_HIDDEN;

/* ---- the data path's first step ---- */

/* Requests are recorded only while a program watches their completion: without one, the data path
 * costs a slot load at isend/irecv, and at test a load (before any request was recorded) or a probe
 * of the calling thread's lane. A request posted before a program was published completes unseen. */
static inline uintptr_t nbn_watching(int hook) {
	return atomic_load_explicit(&g_nbn_slots[hook].fn, memory_order_relaxed);
}

/* isend and irecv check for a program first: without one they are a jump to the inner plugin's. */
static inline nbn_result_t w_isend(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                                   void **request) {
	if (!nbn_watching(NCCLBPF_NET_SEND_END))
		return g_nbn_in.v10.isend(sendComm, data, size, tag, mhandle, phandle, request);
	return w_isend_watched(sendComm, data, size, tag, mhandle, phandle, request);
}

static inline nbn_result_t w_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                                   void **phandles, void **request) {
	if (!nbn_watching(NCCLBPF_NET_RECV_END))
		return g_nbn_in.v10.irecv(recvComm, n, data, sizes, tags, mhandles, phandles, request);
	return w_irecv_watched(recvComm, n, data, sizes, tags, mhandles, phandles, request);
}

#endif /* NCCLBPF_PLUGIN_NET_INTERNAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * net_abi.c: an inner net plugin of ABI v6..v9 seen as v10 (what NCCL's own adapters do,
 * docs/nccl-net-abi.md section 7): no profiler callback, no connection configuration, no phandles;
 * int sizes below v9 (a larger isend/irecv or registration is refused with ncclInternalError
 * without calling the plugin); fewer properties, the missing ones filled as NCCL fills them; no
 * device handles in v6. net.c then drives the inner plugin as a v10 one.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "net.h"
#include "net_abi.h"

/* The inner plugin's own table and version, set once by nbn_adapt_old before any call. */
static struct nbn_net_old g_old;
static int g_old_version;

/* ---- adapters: an inner plugin of net ABI v6..v9 seen as v10 (what NCCL's own adapters do) ---- */

static nbn_result_t old_init(nbn_logger_t log, nbn_prof_cb_t prof) {
	(void)prof; /* before v10 a plugin reports no profiler events */
	return g_old.init(log);
}

/* Fields the inner version lacks get the values NCCL gives them for such a plugin. out is a v10
 * structure of the wrapper's own (inner_props() below; maxMultiRequestSize already preset). */
static nbn_result_t old_props(int dev, void *out) {
	struct nbn_props *p = out;
	union {
		struct nbn_props_v6 v6;
		struct nbn_props_v7 v7;
		struct nbn_props_v8 v8;
		struct nbn_props v9;
	} o;
	memset(&o, 0, sizeof o);
	nbn_result_t rc = g_old.getProperties(dev, &o);
	if (rc != NBN_SUCCESS) return rc;
	if (g_old_version == 9) {
		memcpy(p, &o.v9, NBN_PROPS_V10_SIZE);
		return NBN_SUCCESS;
	}
	if (g_old_version == 8) {
		p->name = o.v8.name;
		p->pciPath = o.v8.pciPath;
		p->guid = o.v8.guid;
		p->ptrSupport = o.v8.ptrSupport;
		p->regIsGlobal = o.v8.regIsGlobal;
		p->speed = o.v8.speed;
		p->port = o.v8.port;
		p->latency = o.v8.latency;
		p->maxComms = o.v8.maxComms;
		p->maxRecvs = o.v8.maxRecvs;
		p->netDeviceType = o.v8.netDeviceType;
		p->netDeviceVersion = o.v8.netDeviceVersion;
	} else {
		const struct nbn_props_v6 *q = &o.v6; /* v7 begins with v6 */
		p->name = q->name;
		p->pciPath = q->pciPath;
		p->guid = q->guid;
		p->ptrSupport = q->ptrSupport;
		p->regIsGlobal = 0;
		p->speed = q->speed;
		p->port = q->port;
		p->latency = q->latency;
		p->maxComms = q->maxComms;
		p->maxRecvs = q->maxRecvs;
		/* v6 knows no device offload: a host device, no offload version */
		p->netDeviceType = g_old_version == 7 ? o.v7.netDeviceType : NBN_DEVICE_HOST;
		p->netDeviceVersion = g_old_version == 7 ? o.v7.netDeviceVersion : NBN_DEVICE_INVALID_VERSION;
	}
	p->forceFlush = 0;
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = dev;
	p->maxP2pBytes = NBN_MAX_NET_SIZE;
	p->maxCollBytes = NBN_MAX_COLLNET_SIZE;
	return NBN_SUCCESS;
}

static nbn_result_t old_connect(int dev, struct nbn_comm_config *cfg, void *handle, void **sendComm,
                                struct nbn_dev_handle **sendDevComm) {
	(void)cfg; /* before v10 a connection has no traffic class */
	if (g_old_version == 6) {
		/* v6 has no device offload: no device handle (NCCL's adapter leaves the caller's variable,
		 * which NCCL zeroes beforehand; the wrapper stores NULL, whoever the caller is) */
		if (sendDevComm) *sendDevComm = NULL;
		return ((nbn_connect_v6_t)g_old.connect)(dev, handle, sendComm);
	}
	return ((nbn_connect_v7_t)g_old.connect)(dev, handle, sendComm, sendDevComm);
}

static nbn_result_t old_accept_v6(void *listenComm, void **recvComm, struct nbn_dev_handle **recvDevComm) {
	if (recvDevComm) *recvDevComm = NULL; /* v6 has no device offload (old_connect) */
	return ((nbn_accept_v6_t)g_old.accept)(listenComm, recvComm);
}

/* v6, v7: a registration's size is an int. */
static nbn_result_t old_regMr_int(void *comm, void *data, size_t size, int type, void **mhandle) {
	if (size >= (1ull << 31)) return NBN_INTERNAL_ERROR;
	return ((nbn_regmr_int_t)g_old.regMr)(comm, data, (int)size, type, mhandle);
}

/* v6..v8: sizes are ints, and NCCL sends at most MAX_NET_SIZE at once to such a plugin. */
static nbn_result_t old_isend_int(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                                  void **request) {
	(void)phandle;
	if (size > NBN_MAX_NET_SIZE) return NBN_INTERNAL_ERROR;
	return ((nbn_isend_int_t)g_old.isend)(sendComm, data, (int)size, tag, mhandle, request);
}

static nbn_result_t old_irecv_int(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                                  void **phandles, void **request) {
	(void)phandles;
	int isizes[NBN_MAX_SUBS];
	if (n < 0 || n > NBN_MAX_SUBS) return NBN_INTERNAL_ERROR;
	/* the "no completion needed" hint came with v9: an older plugin would take it for a request */
	if (*request == NBN_OPTIONAL_RECV_COMPLETION) *request = NULL;
	for (int i = 0; i < n; i++) {
		if (sizes[i] > NBN_MAX_NET_SIZE) return NBN_INTERNAL_ERROR;
		isizes[i] = (int)sizes[i];
	}
	return ((nbn_irecv_int_t)g_old.irecv)(recvComm, n, data, isizes, tags, mhandles, request);
}

static nbn_result_t old_isend_v9(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                                 void **request) {
	(void)phandle;
	return ((nbn_isend_v9_t)g_old.isend)(sendComm, data, size, tag, mhandle, request);
}

static nbn_result_t old_irecv_v9(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                                 void **phandles, void **request) {
	(void)phandles;
	return ((nbn_irecv_v9_t)g_old.irecv)(recvComm, n, data, sizes, tags, mhandles, request);
}

/* adapt_old fills g_in.v10 from the v6..v9 table t. */
void nbn_adapt_old(const void *t, int v, struct nbn_net_v10 *a) {
	size_t size = v == 6 ? NBN_NET_V6_SIZE : v <= 8 ? NBN_NET_V7_SIZE : NBN_NET_V9_SIZE;
	g_old_version = v;
	memset(&g_old, 0, sizeof g_old);
	memcpy(&g_old, t, size);
	memset(a, 0, sizeof *a);
	a->name = g_old.name;
	a->init = g_old.init ? old_init : NULL;
	a->devices = g_old.devices;
	a->getProperties = g_old.getProperties ? old_props : NULL;
	a->listen_ = (void *)g_old.listen;
	a->connect_ = g_old.connect ? (void *)old_connect : NULL;
	a->accept = !g_old.accept ? NULL : v == 6 ? old_accept_v6 : (nbn_accept_v7_t)g_old.accept;
	a->regMr = !g_old.regMr ? NULL : v <= 7 ? old_regMr_int : (nbn_regmr_t)g_old.regMr;
	a->regMrDmaBuf = g_old.regMrDmaBuf;
	a->deregMr = g_old.deregMr;
	a->isend = !g_old.isend ? NULL : v == 9 ? old_isend_v9 : old_isend_int;
	a->irecv = !g_old.irecv ? NULL : v == 9 ? old_irecv_v9 : old_irecv_int;
	a->iflush = g_old.iflush;
	a->test = g_old.test;
	a->closeSend = g_old.closeSend;
	a->closeRecv = g_old.closeRecv;
	a->closeListen = g_old.closeListen;
	a->getDeviceMr = g_old.getDeviceMr;     /* NULL for v6 */
	a->irecvConsumed = g_old.irecvConsumed; /* NULL for v6 */
	a->makeVDevice = g_old.makeVDevice;     /* NULL before v9 */
}

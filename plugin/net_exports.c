/* SPDX-License-Identifier: MIT */
/*
 * net_exports.c: the net wrapper's exported tables, ncclNetPlugin_v12, _v11 and _v10 (NCCL 2.27 to
 * 2.30) and _v9 and _v8 (NCCL 2.21 to 2.26), with their per-version entry points.
 *
 * NCCL_NET_PLUGIN names this library. Every version's entries lead to the same wrapper (net.c
 * watches, net_inner.c passes the calls to the inner plugin); what differs between versions is
 * converted here: init with or without a per-communicator context, properties and virtual devices
 * between the caller's version and the inner plugin's (v12's hold 8 devices per virtual NIC,
 * v9..v11's 4), and v9's and v8's older signatures. isend and irecv are net_internal.h's inline
 * first step, so no version's entry adds a call on the data path.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>
#include "net_internal.h"

/* ------------------------------------------------------------------------------------------------
 * Init, listen and connect per version. */

static nbn_result_t w_init_v10(nbn_logger_t log, nbn_prof_cb_t prof) { return nbn_init_process(log, prof, 10); }
static nbn_result_t w_init_v11(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
                               nbn_prof_cb_t prof) {
	return nbn_init_comm(ctx, commId, config, log, prof, 11);
}
static nbn_result_t w_init_v12(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
                               nbn_prof_cb_t prof) {
	return nbn_init_comm(ctx, commId, config, log, prof, 12);
}
static nbn_result_t w_listen_v11(void *ctx, int dev, void *handle, void **listenComm) {
	struct nbn_ctx *w = ctx;
	return nbn_listen(w ? w->inner : NULL, w ? w->comm_id : 0, dev, handle, listenComm);
}
static nbn_result_t w_listen_v10(int dev, void *handle, void **listenComm) {
	return nbn_listen(g_nbn_in_ctx10, 0, dev, handle, listenComm);
}
static nbn_result_t w_connect_v11(void *ctx, int dev, void *handle, void **sendComm,
                                  struct nbn_dev_handle **sendDevComm) {
	struct nbn_ctx *w = ctx;
	return nbn_connect(w ? w->inner : NULL, w ? &w->config : NULL, w ? w->comm_id : 0, dev, handle, sendComm,
	                      sendDevComm);
}
static nbn_result_t w_connect_v10(int dev, struct nbn_comm_config *cfg, void *handle, void **sendComm,
                                  struct nbn_dev_handle **sendDevComm) {
	return nbn_connect(g_nbn_in_ctx10, cfg, 0, dev, handle, sendComm, sendDevComm);
}

/* ------------------------------------------------------------------------------------------------
 * Properties in the caller's version, from the wrapper's view (nbn_inner_props, the v12 structure). */

/* props_v11 fills a v10 (with_mreq 0) or v11 structure from the wrapper's view. A virtual device of
 * more than 4 physical ones (only an inner v12 can report one) keeps its first 4: NCCL of these
 * versions makes none larger. */
static nbn_result_t props_v11(int dev, void *out, int with_mreq) {
	struct nbn_props_v12 c;
	nbn_result_t rc = nbn_inner_props(dev, &c);
	if (rc != NBN_SUCCESS) return rc;
	struct nbn_props *p = out;
	memcpy(p, &c, offsetof(struct nbn_props, vProps));
	int n = c.vProps.ndevs;
	p->vProps.ndevs = n < 0 ? 0 : n > NBN_MAX_DEVS_PER_NIC ? NBN_MAX_DEVS_PER_NIC : n;
	memcpy(p->vProps.devs, c.vProps.devs, sizeof p->vProps.devs);
	p->maxP2pBytes = c.maxP2pBytes;
	p->maxCollBytes = c.maxCollBytes;
	if (with_mreq) p->maxMultiRequestSize = c.maxMultiRequestSize;
	return NBN_SUCCESS;
}

static nbn_result_t w_props_v10(int dev, void *p) { /* also v9's: the same structure */
	if (g_nbn_in_version == 10) return g_nbn_in.v10.getProperties(dev, p);
	return props_v11(dev, p, 0);
}
static nbn_result_t w_props_v11(int dev, void *p) {
	if (g_nbn_in_version == 11) return g_nbn_in.v10.getProperties(dev, p);
	return props_v11(dev, p, 1);
}
static nbn_result_t w_props_v12(int dev, void *p) {
	if (g_nbn_in_version == 12) return g_nbn_in.v10.getProperties(dev, p);
	struct nbn_props_v12 c;
	nbn_result_t rc = nbn_inner_props(dev, &c);
	if (rc == NBN_SUCCESS) memcpy(p, &c, sizeof c);
	return rc;
}

/* makeVDevice: v9..v11 describe a virtual device with up to 4 physical ones, v12 with up to 8. NCCL
 * 2.30 asks a pre-v12 plugin for 4 at most, but the wrapper is a v12 plugin to it: more than 4
 * devices for an inner plugin older than v12 is refused (ncclInvalidArgument) without calling it
 * (NCCL's automatic NIC fusion then leaves those devices unmerged). Otherwise the description is
 * copied between the two structures. */
static nbn_result_t w_makeVDevice(int *d, void *props) { /* outer v9, v10, v11 */
	if (g_nbn_in_version != 12) return g_nbn_in.v10.makeVDevice(d, props);
	const struct nbn_vprops *p = props;
	if (p->ndevs < 0 || p->ndevs > NBN_MAX_DEVS_PER_NIC) return NBN_INVALID_ARGUMENT;
	struct nbn_vprops_v12 q;
	memset(&q, 0, sizeof q);
	q.ndevs = p->ndevs;
	memcpy(q.devs, p->devs, sizeof p->devs);
	return g_nbn_in.v10.makeVDevice(d, &q);
}
static nbn_result_t w_makeVDevice_v12(int *d, void *props) {
	if (g_nbn_in_version == 12) return g_nbn_in.v10.makeVDevice(d, props);
	const struct nbn_vprops_v12 *p = props;
	if (p->ndevs < 0 || p->ndevs > NBN_MAX_DEVS_PER_NIC) return NBN_INVALID_ARGUMENT;
	struct nbn_vprops q;
	memset(&q, 0, sizeof q);
	q.ndevs = p->ndevs;
	memcpy(q.devs, p->devs, sizeof q.devs);
	return g_nbn_in.v10.makeVDevice(d, &q);
}

/* ------------------------------------------------------------------------------------------------
 * The exported tables. Not const: optional members the inner plugin lacks are cleared at load. */

#define COMMON(props_fn, listen_fn, connect_fn, vdev_fn)                                                            \
	.devices = w_devices, .getProperties = props_fn, .listen_ = (void *)listen_fn, .connect_ = (void *)connect_fn, \
	.accept = w_accept, .regMr = w_regMr, .regMrDmaBuf = w_regMrDmaBuf, .deregMr = w_deregMr, .isend = w_isend,  \
	.irecv = w_irecv, .iflush = w_iflush, .test = w_test, .closeSend = w_closeSend, .closeRecv = w_closeRecv,     \
	.closeListen = w_closeListen, .getDeviceMr = w_getDeviceMr, .irecvConsumed = w_irecvConsumed,                \
	.makeVDevice = vdev_fn

NBN_EXPORT struct nbn_net_v10 ncclNetPlugin_v10 = {
    .name = "ncclbpf", .init = w_init_v10, COMMON(w_props_v10, w_listen_v10, w_connect_v10, w_makeVDevice)};
NBN_EXPORT struct nbn_net_v11 ncclNetPlugin_v11 = {.name = "ncclbpf",
                                                   .init = w_init_v11,
                                                   COMMON(w_props_v11, w_listen_v11, w_connect_v11, w_makeVDevice),
                                                   .finalize = w_finalize,
                                                   .setNetAttr = w_set_net_attr};
NBN_EXPORT struct nbn_net_v11 ncclNetPlugin_v12 = {.name = "ncclbpf",
                                                   .init = w_init_v12,
                                                   COMMON(w_props_v12, w_listen_v11, w_connect_v11, w_makeVDevice_v12),
                                                   .finalize = w_finalize,
                                                   .setNetAttr = w_set_net_attr};

/* ---- ncclNetPlugin_v9 and _v8, for NCCL 2.21 to 2.26 (section 7 of docs/nccl-net-abi.md) ---------
 * The same wrapper under the older signatures: no profiler callback, no connection configuration
 * (the inner plugin gets an undefined traffic class), no phandles; v8 has int sizes and the v8
 * properties. Tables in the layout of struct nbn_net_old (v8 ends before makeVDevice). */

static struct nbn_comm_config g_cfg_undef = {-1};
static nbn_result_t o_init_v9(nbn_logger_t log) { return nbn_init_process(log, NULL, 9); }
static nbn_result_t o_init_v8(nbn_logger_t log) { return nbn_init_process(log, NULL, 8); }
static nbn_result_t o_props_v9(int dev, void *p) { return w_props_v10(dev, p); } /* v9's is v10's */
static nbn_result_t o_props_v8(int dev, void *out) {
	struct nbn_props_v12 p;
	nbn_result_t rc = nbn_inner_props(dev, &p);
	if (rc != NBN_SUCCESS) return rc;
	struct nbn_props_v8 *q = out;
	q->name = p.name;
	q->pciPath = p.pciPath;
	q->guid = p.guid;
	q->ptrSupport = p.ptrSupport;
	q->regIsGlobal = p.regIsGlobal;
	q->speed = p.speed;
	q->port = p.port;
	q->latency = p.latency;
	q->maxComms = p.maxComms;
	q->maxRecvs = p.maxRecvs;
	q->netDeviceType = p.netDeviceType;
	q->netDeviceVersion = p.netDeviceVersion;
	return NBN_SUCCESS;
}
static nbn_result_t o_connect(int dev, void *handle, void **sendComm, struct nbn_dev_handle **sendDevComm) {
	return nbn_connect(g_nbn_in_ctx10, &g_cfg_undef, 0, dev, handle, sendComm, sendDevComm);
}
static nbn_result_t o_isend_v9(void *sendComm, void *data, size_t size, int tag, void *mhandle, void **request) {
	return w_isend(sendComm, data, size, tag, mhandle, NULL, request);
}
static nbn_result_t o_irecv_v9(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                               void **request) {
	return w_irecv(recvComm, n, data, sizes, tags, mhandles, NULL, request);
}
static nbn_result_t o_isend_v8(void *sendComm, void *data, int size, int tag, void *mhandle, void **request) {
	if (size < 0) return NBN_INVALID_ARGUMENT;
	return w_isend(sendComm, data, (size_t)size, tag, mhandle, NULL, request);
}
static nbn_result_t o_irecv_v8(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
                               void **request) {
	size_t s[NBN_MAX_SUBS];
	if (n < 0 || n > NBN_MAX_SUBS) return NBN_INTERNAL_ERROR;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0) return NBN_INVALID_ARGUMENT;
		s[i] = (size_t)sizes[i];
	}
	return w_irecv(recvComm, n, data, s, tags, mhandles, NULL, request);
}

#define OLD_COMMON                                                                                                  \
	.name = "ncclbpf", .devices = w_devices, .listen = w_listen_v10, .connect = (void *)o_connect,                 \
	.accept = (void *)w_accept, .regMr = (void *)w_regMr, .regMrDmaBuf = w_regMrDmaBuf, .deregMr = w_deregMr,      \
	.iflush = w_iflush, .test = w_test, .closeSend = w_closeSend, .closeRecv = w_closeRecv,                         \
	.closeListen = w_closeListen, .getDeviceMr = w_getDeviceMr, .irecvConsumed = w_irecvConsumed
NBN_EXPORT struct nbn_net_old ncclNetPlugin_v9 = {OLD_COMMON, .init = o_init_v9, .getProperties = o_props_v9,
                                                  .isend = (void *)o_isend_v9, .irecv = (void *)o_irecv_v9,
                                                  .makeVDevice = w_makeVDevice};
NBN_EXPORT struct nbn_net_old ncclNetPlugin_v8 = {OLD_COMMON, .init = o_init_v8, .getProperties = o_props_v8,
                                                  .isend = (void *)o_isend_v8, .irecv = (void *)o_irecv_v8,
                                                  .makeVDevice = NULL /* not in v8 */};

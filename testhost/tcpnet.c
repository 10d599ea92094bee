/* SPDX-License-Identifier: MIT */
/*
 * tcpnet.c: a small TCP net plugin (NCCL net ABI v11; v10 when built with -DTCPNET_V10; v12 alone, or
 * only one of the older v6..v9, when built with -DTCPNET_ABI=12 or 6..9, with that version's
 * signatures: int sizes below v9, no device handles in v6), the inner plugin of the wrapper's tests
 * (plugin/e2e/net_test.go, testhost/net_host.c) and of the GPU experiment.
 *
 * The -DTCPNET_ABI tables report properties the default one does not (port 3, latency 2.5, 777
 * comms; for v8, a global registration; for v12, its own transfer limits, rail and plane), and have
 * the optional members their version knows as stubs that count their calls (getDeviceMr and
 * irecvConsumed from v7, makeVDevice from v9: *d = 100 * ndevs + the last device); regMrDmaBuf and
 * iflush stay NULL, as in Google's fastsocket. The wrapper's tests check that all this comes through
 * its adaptation. tcpnet_calls (exported) counts the calls that reached the plugin's entry points.
 *
 * One device (loopback or the address in TCPNET_ADDR). listen binds an ephemeral port; the handle
 * carries the address. Messages are framed (tag, size) and matched in order per connection, as
 * NCCL's own socket transport does: the tag of the next message must be the tag of the oldest
 * posted receive. Requests come from a per-comm pool of 32 (NCCL's limit) and progress inside test.
 * regMr records the registered range and isend/irecv refuse buffers outside it.
 *
 * TCPNET_SLOW_CONN=k with TCPNET_SLOW_US=d makes the k-th connection this process connects (from 1)
 * a slow link: its sends complete no earlier than d microseconds after isend.
 *
 * TCPNET_NO_SIZES=1 makes test report no sizes (some real plugins never do).
 *
 * TCPNET_NULL=1 makes sends complete at their first test without touching the socket and the peer
 * never sees them (the cost of the wrapper, not of TCP, is what the benchmark measures).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../plugin/net_abi.h"

#define NREQ NBN_MAX_REQUESTS
#define MAGIC 0x74637031u
#define NBN_LOG_WARN 2

struct handle {
	uint32_t magic;
	struct sockaddr_in addr;
};

struct mr {
	uintptr_t base;
	size_t size;
};

struct req {
	struct comm *c;
	int used, done, is_send;
	char *buf;
	size_t size; /* send: bytes; recv: posted capacity */
	int tag;
	size_t off;         /* payload bytes moved */
	uint32_t hdr[4];    /* send: framed header; recv: header being read */
	size_t hdr_off;     /* header bytes moved */
	size_t got;         /* recv: message size */
	int err;
	uint64_t posted_ns;
};

struct comm {
	int fd;
	int is_send;
	int null_mode;
	uint64_t slow_ns; /* sends complete no earlier than this after isend */
	struct req reqs[NREQ];
	int q[NREQ]; /* FIFO of request indices */
	int qh, qn;
};

/* calls that reached the table's entry points, read by net_host through dlsym */
struct tcpnet_calls {
	uint64_t isend, irecv, regMr, makeVDevice, getDeviceMr, irecvConsumed;
};
__attribute__((visibility("default"))) struct tcpnet_calls tcpnet_calls;

static nbn_logger_t g_log;
static int g_null, g_no_sizes;
static int g_connects;

static uint64_t mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int set_nodelay(int fd) {
	int one = 1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static nbn_result_t t_init_common(nbn_logger_t log) {
	g_log = log;
	const char *n = getenv("TCPNET_NULL");
	g_null = n && *n == '1';
	const char *ns = getenv("TCPNET_NO_SIZES");
	g_no_sizes = ns && *ns == '1';
	if (getenv("TCPNET_FAIL_INIT")) return NBN_SYSTEM_ERROR;
	return NBN_SUCCESS;
}
__attribute__((unused)) static nbn_result_t t_init10(nbn_logger_t log, nbn_prof_cb_t prof) { return t_init_common(log); }
__attribute__((unused)) static nbn_result_t t_init11(void **ctx, uint64_t commId, struct nbn_comm_config *cfg, nbn_logger_t log,
                             nbn_prof_cb_t prof) {
	*ctx = (void *)(uintptr_t)(commId | 1); /* any non-NULL value: checked by listen/connect */
	return t_init_common(log);
}
static nbn_result_t t_devices(int *n) {
	*n = 1;
	return NBN_SUCCESS;
}
static nbn_result_t t_props(int dev, void *out) {
	if (dev != 0) return NBN_INVALID_ARGUMENT;
	struct nbn_props *p = out;
	p->name = "tcpnet0";
	p->pciPath = NULL;
	p->guid = 0x7463706e657430ull;
	p->ptrSupport = NBN_PTR_HOST;
	p->regIsGlobal = 0;
	p->forceFlush = 0;
	p->speed = 10000;
	p->port = 1;
	p->latency = 0;
	p->maxComms = 65536;
	p->maxRecvs = 1;
	p->netDeviceType = 0;
	p->netDeviceVersion = 0;
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = 0;
	p->maxP2pBytes = 1ul << 30;
	p->maxCollBytes = 1ul << 30;
#ifndef TCPNET_V10
	p->maxMultiRequestSize = 1;
#endif
	return NBN_SUCCESS;
}

static nbn_result_t t_listen10(int dev, void *opaque, void **lc) {
	struct handle *h = opaque;
	memset(opaque, 0, NBN_HANDLE_MAXSIZE);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) return NBN_SYSTEM_ERROR;
	struct sockaddr_in a = {.sin_family = AF_INET};
	const char *ip = getenv("TCPNET_ADDR");
	inet_pton(AF_INET, ip && *ip ? ip : "127.0.0.1", &a.sin_addr);
	socklen_t len = sizeof a;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64) || getsockname(fd, (struct sockaddr *)&a, &len) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		close(fd);
		return NBN_SYSTEM_ERROR;
	}
	h->magic = MAGIC;
	h->addr = a;
	int *l = malloc(sizeof *l);
	*l = fd;
	*lc = l;
	return NBN_SUCCESS;
}
__attribute__((unused)) static nbn_result_t t_listen11(void *ctx, int dev, void *opaque, void **lc) {
	if (!ctx) return NBN_INTERNAL_ERROR;
	return t_listen10(dev, opaque, lc);
}

static struct comm *new_comm(int fd, int is_send) {
	struct comm *c = calloc(1, sizeof *c);
	c->fd = fd;
	c->is_send = is_send;
	c->null_mode = g_null;
	set_nodelay(fd);
	return c;
}

static nbn_result_t t_connect10(int dev, struct nbn_comm_config *cfg, void *opaque, void **sc,
                                struct nbn_dev_handle **sdc) {
	struct handle *h = opaque;
	if (h->magic != MAGIC) return NBN_INVALID_ARGUMENT;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&h->addr, sizeof h->addr)) {
		if (fd >= 0) close(fd);
		return NBN_SYSTEM_ERROR;
	}
	struct comm *c = new_comm(fd, 1);
	const char *k = getenv("TCPNET_SLOW_CONN"), *us = getenv("TCPNET_SLOW_US");
	if (k && us && atoi(k) == ++g_connects) c->slow_ns = (uint64_t)atol(us) * 1000;
	*sc = c;
	if (sdc) *sdc = NULL;
	return NBN_SUCCESS;
}
__attribute__((unused)) static nbn_result_t t_connect11(void *ctx, int dev, void *opaque, void **sc, struct nbn_dev_handle **sdc) {
	if (!ctx) return NBN_INTERNAL_ERROR;
	return t_connect10(dev, NULL, opaque, sc, sdc);
}

/* accept does not block (NCCL's proxy calls it again until *rc is set, as for connect): the peer's
 * connect may be queued behind this very call on a proxy thread. */
static nbn_result_t t_accept(void *lc, void **rc, struct nbn_dev_handle **rdc) {
	*rc = NULL;
	if (rdc) *rdc = NULL;
	int fd = accept4(*(int *)lc, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return NBN_SUCCESS;
	if (fd < 0) return NBN_SYSTEM_ERROR;
	*rc = new_comm(fd, 0);
	if (rdc) *rdc = NULL;
	return NBN_SUCCESS;
}

static nbn_result_t t_regMr(void *comm, void *data, size_t size, int type, void **mh) {
	if (type != NBN_PTR_HOST) return NBN_INVALID_ARGUMENT;
	struct mr *m = malloc(sizeof *m);
	m->base = (uintptr_t)data;
	m->size = size;
	*mh = m;
	return NBN_SUCCESS;
}
static nbn_result_t t_deregMr(void *comm, void *mh) {
	free(mh);
	return NBN_SUCCESS;
}

static int inside(void *mh, const void *p, size_t n) {
	struct mr *m = mh;
	return m && (uintptr_t)p >= m->base && (uintptr_t)p + n <= m->base + m->size;
}

static struct req *get_req(struct comm *c) {
	if (c->qn == NREQ) return NULL;
	for (int i = 0; i < NREQ; i++) {
		if (!c->reqs[i].used) {
			struct req *r = &c->reqs[i];
			memset(r, 0, sizeof *r);
			r->used = 1;
			r->c = c;
			c->q[(c->qh + c->qn++) % NREQ] = i;
			return r;
		}
	}
	return NULL;
}

static nbn_result_t t_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **request) {
	struct comm *c = sc;
	if (size && !inside(mh, data, size)) return NBN_INVALID_ARGUMENT;
	struct req *r = get_req(c);
	*request = r;
	if (!r) return NBN_SUCCESS; /* NCCL tries again */
	r->is_send = 1;
	r->buf = data;
	r->size = size;
	r->tag = tag;
	r->hdr[0] = MAGIC;
	r->hdr[1] = (uint32_t)tag;
	r->hdr[2] = (uint32_t)size;
	r->hdr[3] = (uint32_t)(size >> 32);
	if (c->null_mode) r->done = 1;
	if (c->slow_ns) r->posted_ns = mono_ns();
	return NBN_SUCCESS;
}

static nbn_result_t t_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mh, void **ph,
                            void **request) {
	struct comm *c = rc;
	if (n != 1) return NBN_INVALID_ARGUMENT; /* maxRecvs is 1 */
	if (sizes[0] && !inside(mh[0], data[0], sizes[0])) return NBN_INVALID_ARGUMENT;
	struct req *r = get_req(c);
	*request = r;
	if (!r) return NBN_SUCCESS;
	r->buf = data[0];
	r->size = sizes[0];
	r->tag = tags[0];
	return NBN_SUCCESS;
}

/* progress moves the head request of c's queue as far as the socket allows; returns -1 on error. */
static int progress(struct comm *c) {
	while (c->qn > 0) {
		struct req *r = &c->reqs[c->q[c->qh]];
		if (r->done) { /* completed, waiting for its test */
			return 0;
		}
		if (r->hdr_off < sizeof r->hdr) {
			ssize_t k = r->is_send ? send(c->fd, (char *)r->hdr + r->hdr_off, sizeof r->hdr - r->hdr_off,
			                              MSG_DONTWAIT | MSG_NOSIGNAL)
			                       : recv(c->fd, (char *)r->hdr + r->hdr_off, sizeof r->hdr - r->hdr_off,
			                              MSG_DONTWAIT);
			if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
			if (k <= 0) return -1;
			r->hdr_off += (size_t)k;
			if (r->hdr_off < sizeof r->hdr) return 0;
			if (!r->is_send) {
				uint64_t sz = r->hdr[2] | (uint64_t)r->hdr[3] << 32;
				if (r->hdr[0] != MAGIC || (int)r->hdr[1] != r->tag || sz > r->size) {
					if (g_log)
						g_log(NBN_LOG_WARN, 0x10, __FILE__, __LINE__,
						      "tcpnet: message tag %d size %llu does not match the receive (tag %d, %zu bytes)",
						      (int)r->hdr[1], (unsigned long long)sz, r->tag, r->size);
					return -1;
				}
				r->got = sz;
			}
		}
		size_t want = r->is_send ? r->size : r->got;
		while (r->off < want) {
			ssize_t k = r->is_send ? send(c->fd, r->buf + r->off, want - r->off, MSG_DONTWAIT | MSG_NOSIGNAL)
			                       : recv(c->fd, r->buf + r->off, want - r->off, MSG_DONTWAIT);
			if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
			if (k <= 0) return -1;
			r->off += (size_t)k;
		}
		r->done = 1;
		return 0;
	}
	return 0;
}

__attribute__((unused)) static nbn_result_t t_test(void *request, int *done, int *sizes) {
	struct req *r = request;
	struct comm *c = r->c;
	*done = 0;
	if (!r->used) return NBN_INTERNAL_ERROR;
	if (!r->done && progress(c) != 0) return NBN_SYSTEM_ERROR;
	if (!r->done) return NBN_SUCCESS;
	/* only the head of the queue completes: requests finish in order */
	if (c->q[c->qh] != (int)(r - c->reqs)) return NBN_SUCCESS;
	if (c->slow_ns && mono_ns() - r->posted_ns < c->slow_ns) return NBN_SUCCESS;
	*done = 1;
	if (sizes && !g_no_sizes) sizes[0] = (int)(r->is_send ? r->size : r->got);
	r->used = 0;
	c->qh = (c->qh + 1) % NREQ;
	c->qn--;
	/* let the next one start moving */
	if (c->qn > 0 && !c->null_mode) progress(c);
	return NBN_SUCCESS;
}

static nbn_result_t t_close(void *comm) {
	struct comm *c = comm;
	close(c->fd);
	free(c);
	return NBN_SUCCESS;
}
static nbn_result_t t_closeListen(void *lc) {
	close(*(int *)lc);
	free(lc);
	return NBN_SUCCESS;
}
__attribute__((unused)) static nbn_result_t t_finalize(void *ctx) { return NBN_SUCCESS; }

/* The entry points of the v10+ tables: count, then the implementation. */
__attribute__((unused)) static nbn_result_t e_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph,
                                                    void **request) {
	tcpnet_calls.isend++;
	return t_isend(sc, data, size, tag, mh, ph, request);
}
__attribute__((unused)) static nbn_result_t e_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mh,
                                                    void **ph, void **request) {
	tcpnet_calls.irecv++;
	return t_irecv(rc, n, data, sizes, tags, mh, ph, request);
}
__attribute__((unused)) static nbn_result_t e_regMr(void *comm, void *data, size_t size, int type, void **mh) {
	tcpnet_calls.regMr++;
	return t_regMr(comm, data, size, type, mh);
}

/* Optional members of the -DTCPNET_ABI tables: stubs that count their calls. */
__attribute__((unused)) static nbn_result_t s_getDeviceMr(void *comm, void *mh, void **dptr) {
	tcpnet_calls.getDeviceMr++;
	*dptr = mh;
	return NBN_SUCCESS;
}
__attribute__((unused)) static nbn_result_t s_irecvConsumed(void *rc, int n, void *request) {
	tcpnet_calls.irecvConsumed++;
	return NBN_SUCCESS;
}
/* props: struct nbn_vprops (v9) or nbn_vprops_v12 (v12): ndevs and devs[] begin both */
__attribute__((unused)) static nbn_result_t s_makeVDevice(int *d, void *props) {
	const struct nbn_vprops *p = props;
	tcpnet_calls.makeVDevice++;
	if (p->ndevs < 1) return NBN_INVALID_ARGUMENT;
	*d = 100 * p->ndevs + p->devs[p->ndevs - 1];
	return NBN_SUCCESS;
}

#define MEMBERS                                                                                                    \
	.devices = t_devices, .getProperties = t_props, .accept = t_accept, .regMr = e_regMr, .regMrDmaBuf = NULL,  \
	.deregMr = t_deregMr, .isend = e_isend, .irecv = e_irecv, .iflush = NULL, .test = t_test, .closeSend = t_close, \
	.closeRecv = t_close, .closeListen = t_closeListen, .getDeviceMr = NULL, .irecvConsumed = NULL,              \
	.makeVDevice = NULL

#if defined(TCPNET_ABI) && TCPNET_ABI == 12
/* ---- v12 alone: its properties structure (8 devices per virtual NIC, rail and plane) ---- */
static nbn_result_t v12_props(int dev, void *out) {
	struct nbn_props p;
	memset(&p, 0, sizeof p);
	nbn_result_t rc = t_props(dev, &p);
	if (rc != NBN_SUCCESS) return rc;
	struct nbn_props_v12 *q = out;
	memcpy(q, &p, offsetof(struct nbn_props, vProps));
	q->port = 3;
	q->latency = 2.5f;
	q->maxComms = 777;
	q->vProps.ndevs = 1;
	q->vProps.devs[0] = dev;
	q->maxP2pBytes = 1ul << 29;
	q->maxCollBytes = 1ul << 28;
	q->maxMultiRequestSize = 4;
	q->railId = 2;
	q->planeId = 5;
	return NBN_SUCCESS;
}
__attribute__((visibility("default"))) const struct nbn_net_v11 ncclNetPlugin_v12 = {
    .name = "tcpnet", .init = t_init11, .devices = t_devices, .getProperties = v12_props,
    .listen_ = (void *)t_listen11, .connect_ = (void *)t_connect11, .accept = t_accept, .regMr = e_regMr,
    .regMrDmaBuf = NULL, .deregMr = t_deregMr, .isend = e_isend, .irecv = e_irecv, .iflush = NULL, .test = t_test,
    .closeSend = t_close, .closeRecv = t_close, .closeListen = t_closeListen, .getDeviceMr = s_getDeviceMr,
    .irecvConsumed = s_irecvConsumed, .makeVDevice = s_makeVDevice, .finalize = t_finalize, .setNetAttr = NULL};
#elif defined(TCPNET_ABI)
/* ---- one older table, over the same implementation ---- */
#if TCPNET_ABI < 6 || TCPNET_ABI > 9
#error "TCPNET_ABI is 6, 7, 8, 9 or 12"
#endif
static nbn_result_t o_init(nbn_logger_t log) { return t_init_common(log); }
static nbn_result_t o_props(int dev, void *out) {
	struct nbn_props p;
	memset(&p, 0, sizeof p);
	nbn_result_t rc = t_props(dev, &p);
	if (rc != NBN_SUCCESS) return rc;
	p.port = 3;
	p.latency = 2.5f;
	p.maxComms = 777;
#if TCPNET_ABI == 9
	memcpy(out, &p, offsetof(struct nbn_props, maxMultiRequestSize));
#elif TCPNET_ABI == 8
	struct nbn_props_v8 *q = out;
	*q = (struct nbn_props_v8){p.name, p.pciPath, p.guid, p.ptrSupport, 1, p.speed, p.port, p.latency,
	                           p.maxComms, p.maxRecvs, 0, 0};
#else
	struct nbn_props_v6 v6 = {p.name, p.pciPath, p.guid, p.ptrSupport, p.speed, p.port, p.latency, p.maxComms, p.maxRecvs};
#if TCPNET_ABI == 7
	struct nbn_props_v7 *q = out;
	q->v6 = v6;
	q->netDeviceType = 0;
	q->netDeviceVersion = 0;
#else
	*(struct nbn_props_v6 *)out = v6;
#endif
#endif
	return NBN_SUCCESS;
}
#if TCPNET_ABI == 6
static nbn_result_t o_connect(int dev, void *opaque, void **sc) { return t_connect10(dev, NULL, opaque, sc, NULL); }
static nbn_result_t o_accept(void *lc, void **rc) { return t_accept(lc, rc, NULL); }
#else
static nbn_result_t o_connect(int dev, void *opaque, void **sc, struct nbn_dev_handle **sdc) {
	return t_connect10(dev, NULL, opaque, sc, sdc);
}
#define o_accept t_accept
#endif
#if TCPNET_ABI <= 7
static nbn_result_t o_regMr(void *comm, void *data, int size, int type, void **mh) {
	tcpnet_calls.regMr++;
	if (size < 0) return NBN_INVALID_ARGUMENT;
	return t_regMr(comm, data, (size_t)size, type, mh);
}
#else
#define o_regMr e_regMr
#endif
#if TCPNET_ABI <= 8
static nbn_result_t o_isend(void *sc, void *data, int size, int tag, void *mh, void **request) {
	tcpnet_calls.isend++;
	if (size < 0) return NBN_INVALID_ARGUMENT;
	return t_isend(sc, data, (size_t)size, tag, mh, NULL, request);
}
static nbn_result_t o_irecv(void *rc, int n, void **data, int *sizes, int *tags, void **mh, void **request) {
	tcpnet_calls.irecv++;
	if (n != 1 || sizes[0] < 0) return NBN_INVALID_ARGUMENT;
	/* NCCL's "no completion needed" hint is v9's: an older plugin never sees it from NCCL */
	if (*request == (void *)1) return NBN_INTERNAL_ERROR;
	size_t s0 = (size_t)sizes[0];
	return t_irecv(rc, n, data, &s0, tags, mh, NULL, request);
}
#else
static nbn_result_t o_isend(void *sc, void *data, size_t size, int tag, void *mh, void **request) {
	return e_isend(sc, data, size, tag, mh, NULL, request);
}
static nbn_result_t o_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mh, void **request) {
	return e_irecv(rc, n, data, sizes, tags, mh, NULL, request);
}
#endif
#define OLD_NAME_(v) ncclNetPlugin_v##v
#define OLD_NAME(v) OLD_NAME_(v)
__attribute__((visibility("default"))) const struct nbn_net_old OLD_NAME(TCPNET_ABI) = {
    .name = "tcpnet",
    .init = o_init,
    .devices = t_devices,
    .getProperties = o_props,
    .listen = t_listen10,
    .connect = (void *)o_connect,
    .accept = (void *)o_accept,
    .regMr = (void *)o_regMr,
    .regMrDmaBuf = NULL,
    .deregMr = t_deregMr,
    .isend = (void *)o_isend,
    .irecv = (void *)o_irecv,
    .iflush = NULL,
#ifdef TCPNET_NO_TEST
    .test = NULL, /* a broken table, for the wrapper's check of required members */
#else
    .test = t_test,
#endif
    .closeSend = t_close,
    .closeRecv = t_close,
    .closeListen = t_closeListen,
    /* members past the version's end (v6: after closeListen; v7, v8: after irecvConsumed) are never
     * read: NULL there */
#if TCPNET_ABI >= 7
    .getDeviceMr = s_getDeviceMr,
    .irecvConsumed = s_irecvConsumed,
#endif
#if TCPNET_ABI >= 9
    .makeVDevice = s_makeVDevice,
#endif
};
#elif defined(TCPNET_V10)
__attribute__((visibility("default"))) const struct nbn_net_v10 ncclNetPlugin_v10 = {
    .name = "tcpnet", .init = t_init10, .listen_ = (void *)t_listen10, .connect_ = (void *)t_connect10, MEMBERS};
#else
__attribute__((visibility("default"))) const struct nbn_net_v11 ncclNetPlugin_v11 = {
    .name = "tcpnet", .init = t_init11, .listen_ = (void *)t_listen11, .connect_ = (void *)t_connect11, MEMBERS,
    .finalize = t_finalize, .setNetAttr = NULL};
#endif

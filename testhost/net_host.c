/* SPDX-License-Identifier: MIT */
/*
 * net_host.c: drives NCCL's net plugin ABI as NCCL's proxy thread does, for the wrapper's tests
 * (plugin/e2e/net_test.go) and its benchmark.
 *
 *   net_host transfer LIB VERSION CHANNELS MSGS WINDOW [RELOAD_A RELOAD_B RELOADS]
 *       Two processes (forked before any library is loaded) each listen on CHANNELS connections,
 *       exchange the handles through pipes, connect to the other's listeners and accept the other's
 *       connections, register their buffers (regMr) and move MSGS messages per channel each way with
 *       up to WINDOW isend/irecv outstanding per connection, tags = message numbers, sizes and bytes
 *       derived from (sender, channel, message), polling test. Every received message is checked (a
 *       completion whose size the plugin does not report, "unsized", at the size sent).
 *       With RELOAD_*, a thread reloads the policy RELOADS times, alternating A and B, while the
 *       data moves. Each process prints "rN key value" lines: its own counts, the wrapper's counters
 *       (ncclbpf_net_get_stats) and the array map "net_counts" of the running policy, when present.
 *       Also printed: the device's properties in the layout of VERSION (and whether anything was
 *       written past it), the optional members each exported table lacks, whether connect/accept
 *       left a device handle, and, over the test plugin only (testhost/tcpnet.c), what makeVDevice,
 *       getDeviceMr and irecvConsumed return and how many of those calls reached it (tcpnet_calls).
 *       With NET_HOST_HOLD set, rank 0 then prints "r0 hold PID" and waits until its stdin closes
 *       (for the CLI to inspect it through the control socket).
 *
 *   net_host threads LIB THREADS ROUNDS [WAVES]
 *       One process, TCPNET_NULL=1 inner, THREADS threads each driving its own connection: per round
 *       50 isend + test pairs, then 8 sends that the next thread tests (completions on another thread
 *       than the one that posted). WAVES (1) times, each time with new threads. Prints "t key value":
 *       the sends made, the wrapper's counters and the counting policy's.
 *
 *   net_host pairs LIB N
 *       One process, TCPNET_NULL=1 inner: N isend + test pairs through LIB (the test plugin itself, or
 *       the wrapper with the policy NCCLBPF_POLICY names) and nothing else, for an instruction count.
 *
 *   net_host limits LIB VERSION
 *       One process, one loopback connection through LIB's ncclNetPlugin_vVERSION: isends and
 *       irecvs of 1 GiB + 1 byte and of 2^32 + 16, registrations of 2 GiB and 2^32 + 4 KiB on a 4 KiB
 *       buffer; prints "limit CALL RC CALLS" (what the wrapper answers for an inner plugin whose ABI
 *       has int sizes, and whether the call reached it).
 *
 *   net_host fill LIB POLICY...
 *       Reloads each POLICY in turn and prints "f I SEND RECV": the context fields (NCCLBPF_NET_R_*)
 *       the wrapper then fills for send and receive completions.
 *
 *   net_host bench WRAPPER INNER N [ROUNDS [POLICY...]]
 *       One process, TCPNET_NULL=1 inner: the cost of an isend + test pair through INNER's table
 *       directly and through WRAPPER's, without a program and with each POLICY (default: the one
 *       NCCLBPF_POLICY names), ROUNDS (11) rounds of N pairs each, interleaved, timed by the thread's
 *       CPU time; and of a test call on a request not done yet. Prints per configuration the median
 *       ns per pair, and the added ns (wrapper minus direct, same round): median and minimum.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../include/ncclbpf_net.h"
#include "../plugin/net.h"
#include "../plugin/net_abi.h"

#define MAXSZ 65536
#define MAXCH 16

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "NCCL %s %s\n", level == 2 ? "WARN" : "INFO", buf);
}

static void die(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "net_host: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The table of either version; v11 and v12 share the v11 layout; v8 and v9 (what NCCL 2.21-2.26 use)
 * are driven through g_oldv10 below, a v10 table of calls into them. */
struct net {
	int version;
	struct nbn_net_v10 *v10;
	struct nbn_net_v11 *v11;
	void *ctx;
};

static struct nbn_net_old *g_old; /* the library's ncclNetPlugin_v8 or _v9 */
static int g_h_overrun;           /* bytes written past a v8 properties structure */
static int g_oldver;
static nbn_result_t h_init(nbn_logger_t log, nbn_prof_cb_t prof) { return g_old->init(log); }
static nbn_result_t h_props(int dev, void *out) {
	if (g_oldver == 9) return g_old->getProperties(dev, out); /* v9's structure is v10's */
	union {
		struct nbn_props_v8 q;
		unsigned char b[128];
	} u;
	memset(&u, 0, sizeof u);
	memset(u.b + sizeof u.q, 0x5a, sizeof u.b - sizeof u.q);
	nbn_result_t rc = g_old->getProperties(dev, &u.q);
	for (size_t i = sizeof u.q; i < sizeof u.b; i++) g_h_overrun += u.b[i] != 0x5a;
	struct nbn_props_v8 q = u.q;
	struct nbn_props *p = out;
	p->name = q.name;
	p->speed = q.speed;
	p->ptrSupport = q.ptrSupport;
	p->port = q.port;
	p->latency = q.latency;
	p->maxComms = q.maxComms;
	p->maxRecvs = q.maxRecvs;
	p->regIsGlobal = q.regIsGlobal;
	p->netDeviceType = q.netDeviceType;
	p->netDeviceVersion = q.netDeviceVersion;
	return rc;
}
static nbn_result_t h_connect(int dev, struct nbn_comm_config *cfg, void *h, void **sc, struct nbn_dev_handle **d) {
	return ((nbn_connect_v7_t)g_old->connect)(dev, h, sc, d);
}
static nbn_result_t h_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **req) {
	if (g_oldver == 9) return ((nbn_isend_v9_t)g_old->isend)(sc, data, size, tag, mh, req);
	return ((nbn_isend_int_t)g_old->isend)(sc, data, (int)size, tag, mh, req);
}
static nbn_result_t h_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mh, void **ph, void **req) {
	if (g_oldver == 9) return ((nbn_irecv_v9_t)g_old->irecv)(rc, n, data, sizes, tags, mh, req);
	int s[NBN_MAX_SUBS];
	for (int i = 0; i < n && i < NBN_MAX_SUBS; i++) s[i] = (int)sizes[i];
	return ((nbn_irecv_int_t)g_old->irecv)(rc, n, data, s, tags, mh, req);
}
static struct nbn_net_v10 g_oldv10;
static void *old_as_v10(void *t, int version) {
	g_old = t;
	g_oldver = version;
	g_oldv10 = (struct nbn_net_v10){.name = g_old->name, .init = h_init, .devices = g_old->devices,
	                                .getProperties = h_props, .listen_ = (void *)g_old->listen,
	                                .connect_ = (void *)h_connect, .accept = (nbn_accept_v7_t)g_old->accept,
	                                .regMr = (nbn_regmr_t)g_old->regMr, .regMrDmaBuf = g_old->regMrDmaBuf,
	                                .deregMr = g_old->deregMr, .isend = h_isend, .irecv = h_irecv,
	                                .iflush = g_old->iflush, .test = g_old->test, .closeSend = g_old->closeSend,
	                                .closeRecv = g_old->closeRecv, .closeListen = g_old->closeListen,
	                                .getDeviceMr = g_old->getDeviceMr, .irecvConsumed = g_old->irecvConsumed,
	                                .makeVDevice = version == 9 ? g_old->makeVDevice : NULL};
	return &g_oldv10;
}

static struct nbn_net_v10 *common(struct net *n) { return n->v10 ? n->v10 : (struct nbn_net_v10 *)n->v11; }

static int open_net(struct net *n, void *lib, int version) {
	char sym[64];
	snprintf(sym, sizeof sym, "ncclNetPlugin_v%d", version);
	void *t = dlsym(lib, sym);
	if (!t) return -1;
	memset(n, 0, sizeof *n);
	n->version = version;
	if (version == 8 || version == 9) {
		n->v10 = old_as_v10(t, version);
		n->version = 10; /* driven as v10 from here */
	} else if (version == 10)
		n->v10 = t;
	else
		n->v11 = t;
	return 0;
}

static int net_init(struct net *n) {
	if (n->version == 10) return n->v10->init(logger, NULL);
	struct nbn_comm_config cfg = {-1};
	return n->v11->init(&n->ctx, 0xc0ffee, &cfg, logger, NULL);
}
static int net_listen(struct net *n, void *h, void **lc) {
	if (n->version == 10) return ((nbn_listen_v10_t)n->v10->listen_)(0, h, lc);
	return ((nbn_listen_v11_t)n->v11->listen_)(n->ctx, 0, h, lc);
}
static int net_connect_dh(struct net *n, void *h, void **sc, struct nbn_dev_handle **dh) {
	struct nbn_comm_config cfg = {-1};
	if (n->version == 10) return ((nbn_connect_v10_t)n->v10->connect_)(0, &cfg, h, sc, dh);
	return ((nbn_connect_v11_t)n->v11->connect_)(n->ctx, 0, h, sc, dh);
}
static int net_connect(struct net *n, void *h, void **sc) {
	struct nbn_dev_handle *dh = NULL;
	return net_connect_dh(n, h, sc, &dh);
}

/* A device handle the plugin must overwrite: no plugin here offloads to the device, so connect and
 * accept must return NULL (a v6 plugin has no handle to give: the wrapper stores NULL for it). */
static struct nbn_dev_handle g_dh_preset;

/* The inner plugin's call counters (testhost/tcpnet.c): LIB itself, or the plugin the wrapper loaded
 * (NCCLBPF_NET_PLUGIN, already open). NULL when there is none. */
struct tcpnet_calls {
	uint64_t isend, irecv, regMr, makeVDevice, getDeviceMr, irecvConsumed;
};
static struct tcpnet_calls *inner_calls(void *lib) {
	struct tcpnet_calls *c = dlsym(lib, "tcpnet_calls");
	if (c) return c;
	const char *in = getenv("NCCLBPF_NET_PLUGIN");
	void *h = in ? dlopen(in, RTLD_NOW | RTLD_NOLOAD) : NULL;
	return h ? dlsym(h, "tcpnet_calls") : NULL;
}

/* print_props prints device 0's properties as the table of version outer returns them, in that
 * version's layout, and how many bytes past that layout's end were written ("overrun"). Fields a
 * version does not have are printed as "-". */
static void print_props(int rank, struct nbn_net_v10 *t, int outer) {
	/* v8: h_props converts into net_host's v10 view (and checks the v8 structure itself) */
	size_t size = outer >= 12 ? sizeof(struct nbn_props_v12) : outer == 11 ? NBN_PROPS_V11_SIZE : NBN_PROPS_V10_SIZE;
	union {
		struct nbn_props p;
		struct nbn_props_v12 p12;
		unsigned char b[256];
	} u;
	memset(&u, 0, sizeof u);
	memset(u.b + size, 0x5a, sizeof u.b - size);
	if (t->getProperties(0, &u)) die("getProperties failed");
	int overrun = g_h_overrun;
	for (size_t i = size; i < sizeof u.b; i++) overrun += u.b[i] != 0x5a;
	char tail[160];
	if (outer >= 12) {
		struct nbn_props_v12 *q = &u.p12;
		snprintf(tail, sizeof tail, "vdevs %d dev0 %d p2p %zu coll %zu mreq %d rail %d plane %d", q->vProps.ndevs,
		         q->vProps.devs[0], q->maxP2pBytes, q->maxCollBytes, q->maxMultiRequestSize, q->railId, q->planeId);
	} else {
		char mreq[16] = "-";
		if (outer == 11) snprintf(mreq, sizeof mreq, "%d", u.p.maxMultiRequestSize);
		snprintf(tail, sizeof tail, "vdevs %d dev0 %d p2p %zu coll %zu mreq %s rail - plane -", u.p.vProps.ndevs,
		         u.p.vProps.devs[0], u.p.maxP2pBytes, u.p.maxCollBytes, mreq);
	}
	/* the fields up to netDeviceVersion sit at the same offsets in v9..v12 (and net_host's v8 view
	 * is converted to them, h_props) */
	struct nbn_props *p = &u.p;
	printf("r%d device %s speed %d ptr %d port %d latency %.2f comms %d recvs %d global %d flush %d type %d version %d "
	       "%s\n",
	       rank, p->name, p->speed, p->ptrSupport, p->port, p->latency, p->maxComms, p->maxRecvs, p->regIsGlobal,
	       p->forceFlush, p->netDeviceType, p->netDeviceVersion, tail);
	printf("r%d props_overrun %d\n", rank, overrun);
}

/* print_absent prints, for each ncclNetPlugin_vN that lib exports, the optional members it lacks. */
static void print_absent(int rank, void *lib) {
	for (int v = 8; v <= 12; v++) {
		char sym[64];
		snprintf(sym, sizeof sym, "ncclNetPlugin_v%d", v);
		void *t = dlsym(lib, sym);
		if (!t) continue;
		if (v <= 9) {
			struct nbn_net_old *o = t;
			printf("r%d absent_v%d%s%s%s%s%s\n", rank, v, o->regMrDmaBuf ? "" : " regMrDmaBuf", o->iflush ? "" : " iflush",
			       o->getDeviceMr ? "" : " getDeviceMr", o->irecvConsumed ? "" : " irecvConsumed",
			       v == 8 ? "" : o->makeVDevice ? "" : " makeVDevice");
		} else {
			struct nbn_net_v10 *o = t;
			printf("r%d absent_v%d%s%s%s%s%s\n", rank, v, o->regMrDmaBuf ? "" : " regMrDmaBuf", o->iflush ? "" : " iflush",
			       o->getDeviceMr ? "" : " getDeviceMr", o->irecvConsumed ? "" : " irecvConsumed",
			       o->makeVDevice ? "" : " makeVDevice");
		}
	}
}

/* print_vdev makes virtual devices through t (version outer): one of devices {0, 7}, and, for v12
 * (which allows 8), one of 5 devices; prints "vdev RC D" and "vdev5 RC", or "vdev none". */
static void print_vdev(int rank, struct nbn_net_v10 *t, int outer) {
	if (!t->makeVDevice) {
		printf("r%d vdev none\n", rank);
		return;
	}
	int d = -1;
	nbn_result_t rc;
	if (outer >= 12) {
		struct nbn_vprops_v12 v = {2, {0, 7}};
		rc = t->makeVDevice(&d, &v);
		printf("r%d vdev %d %d\n", rank, rc, d);
		struct nbn_vprops_v12 w = {5, {0, 1, 2, 3, 4}};
		printf("r%d vdev5 %d\n", rank, t->makeVDevice(&d, &w));
	} else {
		struct nbn_vprops v = {2, {0, 7}};
		rc = t->makeVDevice(&d, &v);
		printf("r%d vdev %d %d\n", rank, rc, d);
	}
}

static unsigned msg_size(int sender, int ch, long i) {
	uint64_t x = (uint64_t)(sender * 7919 + ch * 104729) ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
	x ^= x >> 29;
	unsigned s = (unsigned)(x % MAXSZ);
	if (i % 97 == 0) s = 0;       /* empty messages too */
	if (i % 89 == 0) s = MAXSZ; /* and full ones */
	return s;
}
static unsigned char msg_byte(int sender, int ch, long i, unsigned off) {
	return (unsigned char)((sender * 31 + ch * 17 + i * 13 + off * 7 + (off >> 8)) & 0xff);
}

/* ---- reloads ---- */
static volatile int g_stop;
static const char *g_ra, *g_rb;
static long g_reloads, g_reloads_ok;
static void *g_lib;

static void *reloader(void *arg) {
	int (*reload)(const char *, long long, char *, size_t) = dlsym(g_lib, "ncclbpfTestingReload");
	if (!reload) die("the library has no ncclbpfTestingReload");
	char msg[512];
	for (long k = 0; k < g_reloads && !g_stop; k++) {
		if (reload(k % 2 ? g_rb : g_ra, -1, msg, sizeof msg) == 0)
			g_reloads_ok++;
		else
			fprintf(stderr, "reload %ld: %s\n", k, msg);
		usleep(2000);
	}
	return NULL;
}

static int transfer(int rank, int rfd, int wfd, const char *libpath, int version, int nch, long msgs, int window) {
	g_lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
	if (!g_lib) die("%s", dlerror());
	struct net n;
	if (open_net(&n, g_lib, version)) die("%s exports no ncclNetPlugin_v%d", libpath, version);
	struct nbn_net_v10 *t = common(&n);
	int rc = net_init(&n);
	printf("r%d init %d\n", rank, rc);
	if (rc != 0) return 0;
	int ndev = 0;
	if (t->devices(&ndev) || ndev < 1) die("devices: %d", ndev);
	print_props(rank, t, version);
	printf("r%d absent%s%s%s%s%s\n", rank, t->regMrDmaBuf ? "" : " regMrDmaBuf", t->iflush ? "" : " iflush",
	       t->getDeviceMr ? "" : " getDeviceMr", t->irecvConsumed ? "" : " irecvConsumed",
	       t->makeVDevice ? "" : " makeVDevice");
	print_absent(rank, g_lib);
	/* the members a real plugin would act on (virtual devices, device memory) are called only over
	 * the test plugin, whose stubs count the calls */
	struct tcpnet_calls *ic = inner_calls(g_lib);
	if (ic) print_vdev(rank, t, version);

	int devcomm = 0; /* connect/accept calls that left a device handle */
	char handles[MAXCH][NBN_HANDLE_MAXSIZE], peer[MAXCH][NBN_HANDLE_MAXSIZE];
	void *lc[MAXCH], *sc[MAXCH], *rc_[MAXCH];
	for (int c = 0; c < nch; c++)
		if (net_listen(&n, handles[c], &lc[c])) die("listen failed");
	if (write(wfd, handles, sizeof(handles[0]) * nch) != (ssize_t)(sizeof(handles[0]) * nch)) die("pipe write");
	size_t need = sizeof(peer[0]) * nch, got = 0;
	while (got < need) {
		ssize_t k = read(rfd, (char *)peer + got, need - got);
		if (k <= 0) die("pipe read");
		got += (size_t)k;
	}
	/* rank 0 connects first, rank 1 accepts first: blocking set-up calls cannot deadlock */
	for (int pass = 0; pass < 2; pass++) {
		if ((pass == 0) == (rank == 0)) {
			for (int c = 0; c < nch; c++) {
				sc[c] = NULL;
				while (!sc[c]) {
					struct nbn_dev_handle *dh = &g_dh_preset;
					if (net_connect_dh(&n, peer[c], &sc[c], &dh)) die("connect failed");
					devcomm += dh != NULL;
				}
			}
		} else {
			for (int c = 0; c < nch; c++) {
				rc_[c] = NULL;
				while (!rc_[c]) {
					struct nbn_dev_handle *dh = &g_dh_preset;
					if (t->accept(lc[c], &rc_[c], &dh)) die("accept failed");
					devcomm += dh != NULL;
				}
			}
		}
	}
	printf("r%d devcomm %d\n", rank, devcomm);
	unsigned char *sbuf = malloc((size_t)nch * window * MAXSZ), *rbuf = malloc((size_t)nch * window * MAXSZ);
	void *smr[MAXCH], *rmr[MAXCH];
	for (int c = 0; c < nch; c++) {
		if (t->regMr(sc[c], sbuf + (size_t)c * window * MAXSZ, (size_t)window * MAXSZ, NBN_PTR_HOST, &smr[c]) ||
		    t->regMr(rc_[c], rbuf + (size_t)c * window * MAXSZ, (size_t)window * MAXSZ, NBN_PTR_HOST, &rmr[c]))
			die("regMr failed");
	}
	/* the device-offload members, where the table has them: they must reach the inner plugin */
	if (ic && t->getDeviceMr) {
		void *dptr = NULL;
		int r = t->getDeviceMr(sc[0], smr[0], &dptr);
		printf("r%d devmr %d %d\n", rank, r, dptr == smr[0]);
	}
	if (ic && t->irecvConsumed) printf("r%d consumed %d\n", rank, t->irecvConsumed(rc_[0], 1, NULL));

	pthread_t th;
	if (g_ra) pthread_create(&th, NULL, reloader, NULL);

	void *sreq[MAXCH][NBN_MAX_REQUESTS] = {{0}}, *rreq[MAXCH][NBN_MAX_REQUESTS] = {{0}};
	long sposted[MAXCH] = {0}, sdone[MAXCH] = {0}, rposted[MAXCH] = {0}, rdone[MAXCH] = {0};
	uint64_t sends = 0, recvs = 0, sbytes = 0, rbytes = 0, bad = 0, tests = 0, unsized = 0;
	uint64_t t0 = now_ns();
	for (;;) {
		int busy = 0;
		/* channels move in step, as the channels of one collective do: none posts more than window
		 * messages past the slowest one's completions */
		long low = msgs;
		for (int c = 0; c < nch; c++)
			if (sdone[c] < low) low = sdone[c];
		for (int c = 0; c < nch; c++) {
			/* post */
			while (sposted[c] < msgs && sposted[c] - low < window) {
				long i = sposted[c];
				unsigned char *b = sbuf + ((size_t)c * window + (size_t)(i % window)) * MAXSZ;
				unsigned sz = msg_size(rank, c, i);
				for (unsigned o = 0; o < sz; o++) b[o] = msg_byte(rank, c, i, o);
				void *r = NULL;
				if (t->isend(sc[c], b, sz, (int)(i & 0x7fffffff), smr[c], NULL, &r)) die("isend failed");
				if (!r) break;
				sreq[c][i % window] = r;
				sposted[c]++;
			}
			while (rposted[c] < msgs && rposted[c] - rdone[c] < window) {
				long i = rposted[c];
				void *b = rbuf + ((size_t)c * window + (size_t)(i % window)) * MAXSZ;
				size_t sz = MAXSZ;
				int tag = (int)(i & 0x7fffffff);
				void *r = NULL;
				if (t->irecv(rc_[c], 1, &b, &sz, &tag, &rmr[c], NULL, &r)) die("irecv failed");
				if (!r) break;
				rreq[c][i % window] = r;
				rposted[c]++;
			}
			/* test the oldest of each */
			if (sdone[c] < sposted[c]) {
				int done = 0, size = -1;
				tests++;
				if (t->test(sreq[c][sdone[c] % window], &done, &size)) die("test (send) failed");
				if (done) {
					if (size == -1) { /* not reported (some plugins never do): the size posted */
						unsized++;
						size = (int)msg_size(rank, c, sdone[c]);
					}
					if ((unsigned)size != msg_size(rank, c, sdone[c])) bad++;
					sbytes += (unsigned)size;
					sends++;
					sdone[c]++;
				}
			}
			if (rdone[c] < rposted[c]) {
				int done = 0, size = -1;
				tests++;
				if (t->test(rreq[c][rdone[c] % window], &done, &size)) die("test (recv) failed");
				if (done) {
					long i = rdone[c];
					unsigned want = msg_size(1 - rank, c, i);
					unsigned char *b = rbuf + ((size_t)c * window + (size_t)(i % window)) * MAXSZ;
					if (size == -1) { /* not reported: the content is still checked, at the size sent */
						unsized++;
						size = (int)want;
					}
					if ((unsigned)size != want) {
						bad++;
					} else {
						for (unsigned o = 0; o < want; o++)
							if (b[o] != msg_byte(1 - rank, c, i, o)) {
								bad++;
								break;
							}
					}
					rbytes += (unsigned)size;
					recvs++;
					rdone[c]++;
				}
			}
			if (sdone[c] < msgs || rdone[c] < msgs) busy = 1;
		}
		if (!busy) break;
	}
	uint64_t el = now_ns() - t0;
	g_stop = 1;
	if (g_ra) pthread_join(th, NULL);
	/* As NCCL does before it frees connections: both sides are done before either closes (a plugin
	 * may still be moving a send that its test already reported done, from its own threads). */
	char done = 'd';
	if (write(wfd, &done, 1) != 1 || read(rfd, &done, 1) != 1) die("pipe barrier");
	for (int c = 0; c < nch; c++) {
		t->deregMr(sc[c], smr[c]);
		t->deregMr(rc_[c], rmr[c]);
		t->closeSend(sc[c]);
		t->closeRecv(rc_[c]);
		t->closeListen(lc[c]);
	}
	if (n.version >= 11 && n.v11->finalize) n.v11->finalize(n.ctx);
	printf("r%d sends %llu\nr%d recvs %llu\nr%d sent_bytes %llu\nr%d recv_bytes %llu\nr%d bad %llu\nr%d tests %llu\n",
	       rank, (unsigned long long)sends, rank, (unsigned long long)recvs, rank, (unsigned long long)sbytes, rank,
	       (unsigned long long)rbytes, rank, (unsigned long long)bad, rank, (unsigned long long)tests);
	printf("r%d unsized %llu\n", rank, (unsigned long long)unsized);
	printf("r%d ms %.1f\n", rank, el / 1e6);
	if (g_ra) printf("r%d reloads_ok %ld\n", rank, g_reloads_ok);
	void (*stats)(struct ncclbpf_net_stats *) = dlsym(g_lib, "ncclbpf_net_get_stats");
	if (stats) {
		struct ncclbpf_net_stats s;
		stats(&s);
		printf("r%d w_sends %llu\nr%d w_recvs %llu\nr%d w_untracked %llu\nr%d w_inflight %llu\nr%d w_conns %llu\n",
		       rank, (unsigned long long)s.sends, rank, (unsigned long long)s.recvs, rank,
		       (unsigned long long)s.untracked, rank, (unsigned long long)s.inflight, rank,
		       (unsigned long long)s.conns);
		printf("r%d w_calls_conn %llu\nr%d w_calls_send %llu\nr%d w_calls_recv %llu\nr%d w_outer %d\nr%d w_inner %d\n",
		       rank, (unsigned long long)s.calls[1], rank, (unsigned long long)s.calls[2], rank,
		       (unsigned long long)s.calls[3], rank, s.outer_version, rank, s.inner_version);
	}
	if (ic)
		printf("r%d inner_vdev %llu\nr%d inner_devmr %llu\nr%d inner_consumed %llu\n", rank,
		       (unsigned long long)ic->makeVDevice, rank, (unsigned long long)ic->getDeviceMr, rank,
		       (unsigned long long)ic->irecvConsumed);
	int (*mapu64)(const char *, unsigned, unsigned long long *) = dlsym(g_lib, "ncclbpfTestingMapU64");
	if (mapu64) {
		static const char *names[] = {"m_sends", "m_recvs", "m_sent_bytes", "m_recv_bytes", "m_conns",
		                              "m_untimed", "m_timed"};
		for (unsigned k = 0; k < 7; k++) {
			unsigned long long v;
			if (mapu64("net_counts", k, &v) == 0) printf("r%d %s %llu\n", rank, names[k], v);
		}
		static const char *slow[] = {"slow_peer", "slow_ewma_ns", "slow_conn", "all_ewma_ns", "slow_sends"};
		for (unsigned k = 0; k < 5; k++) {
			unsigned long long v;
			if (mapu64("net_slow", k, &v) == 0) printf("r%d %s %llu\n", rank, slow[k], v);
		}
		for (unsigned k = 0; k < 12; k++) { /* testhost/net_fields.bpf.c */
			unsigned long long v;
			if (mapu64("net_fields", k, &v) == 0) printf("r%d f_%u %llu\n", rank, k, v);
		}
	}
	fflush(stdout);
	if (rank == 0 && getenv("NET_HOST_HOLD")) {
		/* keep the process (and its control socket) alive for the CLI until stdin closes */
		printf("r0 hold %d\n", (int)getpid());
		fflush(stdout);
		char b[64];
		while (read(0, b, sizeof b) > 0) {
		}
	}
	return 0;
}

/* ---- bench ---- */

/* The calling thread's CPU time: a round is not charged for the time another process had the core. */
static uint64_t cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double pairs(struct nbn_net_v10 *t, void *sc, void *mh, char *buf, long n) {
	uint64_t t0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		void *r = NULL;
		int done = 0, size;
		t->isend(sc, buf, 64, (int)i, mh, NULL, &r);
		t->test(r, &done, &size);
		if (!done) die("bench: a null send did not complete at its first test");
	}
	return (double)(cpu_ns() - t0) / (double)n;
}

/* notdone times test calls on a request that is not done: a second send waits behind the first
 * (tcpnet completes a connection's requests in order), as NCCL polls a request many times. */
static double notdone(struct nbn_net_v10 *t, void *sc, void *mh, char *buf, long n) {
	void *a = NULL, *b = NULL;
	int done = 0, size;
	if (t->isend(sc, buf, 64, 1, mh, NULL, &a) || !a || t->isend(sc, buf, 64, 2, mh, NULL, &b) || !b)
		die("bench: isend");
	uint64_t t0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		t->test(b, &done, &size);
		if (done) die("bench: the second send completed before the first");
	}
	double r = (double)(cpu_ns() - t0) / (double)n;
	t->test(a, &done, &size);
	if (!done) die("bench: the first send did not complete");
	t->test(b, &done, &size);
	if (!done) die("bench: the second send did not complete");
	return r;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
	qsort(v, (size_t)n, sizeof v[0], cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void setup_pair(struct net *n, void **sc, void **mh, char *buf) {
	struct nbn_net_v10 *t = common(n);
	if (net_init(n)) die("bench: init failed");
	char h[NBN_HANDLE_MAXSIZE];
	void *lc, *rc;
	struct nbn_dev_handle *dh;
	if (net_listen(n, h, &lc)) die("bench: listen");
	*sc = NULL;
	while (!*sc)
		if (net_connect(n, h, sc)) die("bench: connect");
	rc = NULL;
	while (!rc)
		if (t->accept(lc, &rc, &dh)) die("bench: accept");
	if (t->regMr(*sc, buf, 4096, NBN_PTR_HOST, mh)) die("bench: regMr");
}

/* pairsmain: N isend + test pairs through LIB (a net plugin or the wrapper) and nothing else, for an
 * instruction count (callgrind) of the two calls: run it with two N and take the difference. */
static int pairsmain(const char *lib, long n) {
	void *l = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!l) die("%s", dlerror());
	struct net nt;
	if (open_net(&nt, l, 11)) die("pairs: no v11 table");
	static char buf[4096];
	void *sc, *mh;
	setup_pair(&nt, &sc, &mh, buf);
	pairs(common(&nt), sc, mh, buf, n);
	printf("pairs %ld\n", n);
	return 0;
}

/* limits: sizes an int-size inner plugin (net ABI v6..v8; v6, v7 for registrations) cannot take,
 * through LIB's ncclNetPlugin_vVERSION on one loopback connection. Prints "limit CALL RC CALLS":
 * the result and how many calls reached the inner plugin's entry point (tcpnet_calls). The buffer
 * is 4 KiB: a call that reached the test plugin with its size fails the plugin's bounds check
 * (NBN_INVALID_ARGUMENT), and one that went through truncated to an int (2^32 + 16 -> 16) would be
 * taken. Cases: isend and irecv of 1 GiB + 1 (above NCCL's MAX_NET_SIZE for int-size plugins) and
 * of 2^32 + 16; regMr of 2 GiB (above INT_MAX) and of 2^32 + 4 KiB. */
static int limits(const char *lib, int version) {
	void *l = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!l) die("%s", dlerror());
	struct net nt;
	if (open_net(&nt, l, version)) die("limits: no v%d table", version);
	struct nbn_net_v10 *t = common(&nt);
	static char buf[4096];
	void *sc, *mh;
	setup_pair(&nt, &sc, &mh, buf);
	struct tcpnet_calls *ic = inner_calls(l);
	if (!ic) die("limits: the inner plugin has no tcpnet_calls");
	static const size_t sizes[2] = {(1ull << 30) + 1, (1ull << 32) + 16};
	static const char *names[2] = {"1g1", "4g16"};
	for (int k = 0; k < 2; k++) {
		void *req = NULL;
		uint64_t c0 = ic->isend;
		int rc = t->isend(sc, buf, sizes[k], 1, mh, NULL, &req);
		printf("limit isend_%s %d %llu\n", names[k], rc, (unsigned long long)(ic->isend - c0));
		size_t size = sizes[k];
		void *data = buf;
		int tag = 1;
		req = NULL;
		c0 = ic->irecv;
		/* on the send side's comm, with its registration: the plugin's bounds check refuses it if
		 * it gets the real size */
		rc = t->irecv(sc, 1, &data, &size, &tag, &mh, NULL, &req);
		printf("limit irecv_%s %d %llu\n", names[k], rc, (unsigned long long)(ic->irecv - c0));
	}
	static const size_t regs[2] = {1ull << 31, (1ull << 32) + 4096};
	static const char *rnames[2] = {"2g", "4g4k"};
	for (int k = 0; k < 2; k++) {
		void *big = NULL;
		uint64_t c0 = ic->regMr;
		int rc = t->regMr(sc, buf, regs[k], NBN_PTR_HOST, &big);
		printf("limit regmr_%s %d %llu\n", rnames[k], rc, (unsigned long long)(ic->regMr - c0));
		if (rc == 0) t->deregMr(sc, big);
	}
	return 0;
}

#define MAXPOL 4
#define MAXROUNDS 201

/* bench: ROUNDS rounds; each unloads the policy, times N pairs directly and through the wrapper
 * (no program), then for each policy reloads it and times N pairs directly and through the wrapper,
 * then N/4 test calls on a request not yet done, directly and through the wrapper. A configuration's
 * added cost is the median (and the minimum) over the rounds of its time minus the direct time of
 * the same round, measured right before it. */
static int bench(const char *wrapper, const char *inner, long n, int rounds, int npol, char **pols) {
	void *li = dlopen(inner, RTLD_NOW | RTLD_LOCAL), *lw = dlopen(wrapper, RTLD_NOW | RTLD_LOCAL);
	if (!li || !lw) die("%s", dlerror());
	struct net ni, nw;
	if (open_net(&ni, li, 11) || open_net(&nw, lw, 11)) die("bench: v11 tables missing");
	static char buf[4096];
	void *sci, *mhi, *scw, *mhw;
	setup_pair(&ni, &sci, &mhi, buf);
	setup_pair(&nw, &scw, &mhw, buf);
	int (*unload)(void) = dlsym(lw, "ncclbpfTestingUnload");
	int (*reload)(const char *, long long, char *, size_t) = dlsym(lw, "ncclbpfTestingReload");
	if (!unload || !reload) die("bench: needs the testing exports");
	if (rounds < 1 || rounds > MAXROUNDS || npol < 1 || npol > MAXPOL || n < 4) die("bench: bad sizes");
	static double d[MAXPOL + 1][MAXROUNDS], w[MAXPOL + 1][MAXROUNDS], add[MAXPOL + 1][MAXROUNDS];
	static double ndd[MAXPOL][MAXROUNDS], ndadd[MAXPOL][MAXROUNDS];
	char msg[512];
	struct nbn_net_v10 *ti = common(&ni), *tw = common(&nw);
	pairs(ti, sci, mhi, buf, n / 4); /* warm-up */
	pairs(tw, scw, mhw, buf, n / 4);
	for (int k = 0; k < rounds; k++) {
		if (unload() != 0) die("bench: unload failed");
		d[0][k] = pairs(ti, sci, mhi, buf, n);
		w[0][k] = pairs(tw, scw, mhw, buf, n);
		add[0][k] = w[0][k] - d[0][k];
		for (int p = 0; p < npol; p++) {
			if (reload(pols[p], -1, msg, sizeof msg) != 0) die("bench: reload %s: %s", pols[p], msg);
			d[p + 1][k] = pairs(ti, sci, mhi, buf, n);
			w[p + 1][k] = pairs(tw, scw, mhw, buf, n);
			add[p + 1][k] = w[p + 1][k] - d[p + 1][k];
			ndd[p][k] = notdone(ti, sci, mhi, buf, n / 4);
			ndadd[p][k] = notdone(tw, scw, mhw, buf, n / 4) - ndd[p][k];
		}
	}
	/* the clock the wrapper reads twice per timed request (x86: the cycle counter) */
	uint64_t c0 = cpu_ns(), acc = 0;
	for (long i = 0; i < n; i++) {
#if defined(__x86_64__)
		acc += __builtin_ia32_rdtsc();
		acc += __builtin_ia32_rdtsc();
#else
		acc += now_ns();
		acc += now_ns();
#endif
	}
	double clock2 = (double)(cpu_ns() - c0) / (double)n;
	if (acc == 1) printf("\n");
	printf("bench pairs_per_round %ld rounds %d\n", n, rounds);
	for (int p = 0; p <= npol; p++) {
		const char *name = p == 0 ? "noprog" : pols[p - 1];
		const char *base = strrchr(name, '/');
		base = base ? base + 1 : name;
		char cfg[128];
		snprintf(cfg, sizeof cfg, "%.*s", (int)(strcspn(base, ".")), base);
		double dm = median(d[p], rounds), wm = median(w[p], rounds), am = median(add[p], rounds);
		/* median() sorted add[p]: add[p][0] is the smallest */
		printf("bench cfg %s direct_ns %.1f wrapper_ns %.1f added_ns %.1f added_min_ns %.1f", cfg, dm, wm, am,
		       add[p][0]);
		if (p > 0) {
			double nm = median(ndadd[p - 1], rounds);
			printf(" notdone_direct_ns %.1f notdone_added_ns %.1f", median(ndd[p - 1], rounds), nm);
		}
		printf("\n");
		if (p == 0) {
			printf("bench direct_ns %.1f\nbench wrapper_noprog_ns %.1f\nbench added_noprog_ns %.1f\n", dm, wm, am);
		} else if (p == 1) {
			printf("bench wrapper_count_ns %.1f\nbench added_count_ns %.1f\n", wm, am);
		}
	}
	printf("bench two_clock_reads_ns %.1f\n", clock2);
	unsigned long long v = 0;
	int (*mapu64)(const char *, unsigned, unsigned long long *) = dlsym(lw, "ncclbpfTestingMapU64");
	if (mapu64 && mapu64("net_counts", 0, &v) == 0) printf("bench m_sends %llu\n", v);
	return 0;
}

/* ---- threads ---- */

#define MAXTHR 64
#define XREQ 8 /* requests a thread posts for its neighbour to test, per round */
static struct nbn_net_v10 *g_tt;
static void *g_tsc[MAXTHR], *g_tmh[MAXTHR], *g_xreq[MAXTHR][XREQ];
static int g_nthr;
static long g_trounds;
static pthread_barrier_t g_tbar;
static char g_tbuf[4096];

/* thr: per round, 50 isend + test pairs on its own connection, then XREQ sends posted for its
 * neighbour, which tests them on its own thread (a request completed by another thread than the one
 * that posted it). Each connection is driven by one thread at a time. */
static void *thr(void *arg) {
	int i = (int)(intptr_t)arg, next = (i + 1) % g_nthr;
	for (long k = 0; k < g_trounds; k++) {
		for (int j = 0; j < 50; j++) {
			void *r = NULL;
			int done = 0, size;
			if (g_tt->isend(g_tsc[i], g_tbuf, 64, j, g_tmh[i], NULL, &r) || !r) die("threads: isend");
			if (g_tt->test(r, &done, &size) || !done) die("threads: test");
		}
		for (int j = 0; j < XREQ; j++)
			if (g_tt->isend(g_tsc[i], g_tbuf, 64, j, g_tmh[i], NULL, &g_xreq[i][j]) || !g_xreq[i][j])
				die("threads: isend");
		pthread_barrier_wait(&g_tbar);
		for (int j = 0; j < XREQ; j++) {
			int done = 0, size;
			if (g_tt->test(g_xreq[next][j], &done, &size) || !done) die("threads: test of the neighbour's");
		}
		pthread_barrier_wait(&g_tbar);
	}
	return NULL;
}

static int threads(const char *lib, int nthr, long rounds, int waves) {
	if (nthr < 2 || nthr > MAXTHR || rounds < 1 || waves < 1) die("threads: 2..%d threads, rounds and waves >= 1", MAXTHR);
	void *l = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!l) die("%s", dlerror());
	struct net n;
	if (open_net(&n, l, 11)) die("threads: no v11 table");
	g_tt = common(&n);
	if (net_init(&n)) die("threads: init failed");
	for (int i = 0; i < nthr; i++) {
		char h[NBN_HANDLE_MAXSIZE];
		void *lc, *rc = NULL;
		struct nbn_dev_handle *dh;
		if (net_listen(&n, h, &lc)) die("threads: listen");
		g_tsc[i] = NULL;
		while (!g_tsc[i])
			if (net_connect(&n, h, &g_tsc[i])) die("threads: connect");
		while (!rc)
			if (g_tt->accept(lc, &rc, &dh)) die("threads: accept");
		if (g_tt->regMr(g_tsc[i], g_tbuf, sizeof g_tbuf, NBN_PTR_HOST, &g_tmh[i])) die("threads: regMr");
	}
	g_nthr = nthr;
	g_trounds = rounds;
	pthread_barrier_init(&g_tbar, NULL, (unsigned)nthr);
	pthread_t th[MAXTHR];
	for (int w = 0; w < waves; w++) { /* each wave new threads, the previous ones gone */
		for (int i = 0; i < nthr; i++) pthread_create(&th[i], NULL, thr, (void *)(intptr_t)i);
		for (int i = 0; i < nthr; i++) pthread_join(th[i], NULL);
	}
	printf("t sends %ld\n", (long)waves * nthr * rounds * (50 + XREQ));
	void (*stats)(struct ncclbpf_net_stats *) = dlsym(l, "ncclbpf_net_get_stats");
	if (stats) {
		struct ncclbpf_net_stats st;
		stats(&st);
		printf("t w_sends %llu\nt w_calls_send %llu\nt w_untracked %llu\nt w_inflight %llu\nt w_shared_threads %d\n",
		       (unsigned long long)st.sends, (unsigned long long)st.calls[2], (unsigned long long)st.untracked,
		       (unsigned long long)st.inflight, st.shared_threads);
	}
	int (*mapu64)(const char *, unsigned, unsigned long long *) = dlsym(l, "ncclbpfTestingMapU64");
	unsigned long long v;
	if (mapu64 && mapu64("net_counts", 0, &v) == 0) printf("t m_sends %llu\n", v);
	return 0;
}

/* ---- fill ---- */

/* fill: loads each policy in turn (a reload, with its grace period) and prints the context fields the
 * wrapper then fills for each completion hook ("f POLICY send RECV" masks, NCCLBPF_NET_R_*). */
static int fill(const char *lib, int npol, char **pols) {
	void *l = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!l) die("%s", dlerror());
	struct net n;
	if (open_net(&n, l, 11)) die("fill: no v11 table");
	if (net_init(&n)) die("fill: init failed");
	int (*reload)(const char *, long long, char *, size_t) = dlsym(l, "ncclbpfTestingReload");
	void (*stats)(struct ncclbpf_net_stats *) = dlsym(l, "ncclbpf_net_get_stats");
	if (!reload || !stats) die("fill: needs the testing exports");
	char msg[512];
	for (int i = 0; i < npol; i++) {
		if (reload(pols[i], -1, msg, sizeof msg) != 0) die("fill: reload %s: %s", pols[i], msg);
		struct ncclbpf_net_stats st;
		stats(&st);
		printf("f %d 0x%02x 0x%02x\n", i, st.fill[NCCLBPF_NET_SEND_END], st.fill[NCCLBPF_NET_RECV_END]);
	}
	return 0;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 5 && strcmp(argv[1], "bench") == 0) {
		char *env[1] = {getenv("NCCLBPF_POLICY")};
		if (argc < 7 && !env[0]) die("bench: no policy (NCCLBPF_POLICY or arguments)");
		return bench(argv[2], argv[3], atol(argv[4]), argc >= 6 ? atoi(argv[5]) : 11, argc >= 7 ? argc - 6 : 1,
		             argc >= 7 ? argv + 6 : env);
	}
	if (argc >= 3 && strcmp(argv[1], "fill") == 0) return fill(argv[2], argc - 3, argv + 3);
	if (argc == 4 && strcmp(argv[1], "pairs") == 0) return pairsmain(argv[2], atol(argv[3]));
	if (argc == 4 && strcmp(argv[1], "limits") == 0) return limits(argv[2], atoi(argv[3]));
	if (argc >= 5 && strcmp(argv[1], "threads") == 0)
		return threads(argv[2], atoi(argv[3]), atol(argv[4]), argc >= 6 ? atoi(argv[5]) : 1);
	if (argc < 7 || strcmp(argv[1], "transfer") != 0)
		die("usage: net_host transfer LIB VERSION CHANNELS MSGS WINDOW [RELOAD_A RELOAD_B RELOADS] | "
		    "net_host bench WRAPPER INNER N [ROUNDS [POLICY...]] | net_host threads LIB THREADS ROUNDS [WAVES] | net_host fill LIB POLICY... | "
		    "net_host pairs LIB N");
	int version = atoi(argv[3]), nch = atoi(argv[4]), window = atoi(argv[6]);
	long msgs = atol(argv[5]);
	if (nch < 1 || nch > MAXCH || window < 1 || window > NBN_MAX_REQUESTS || msgs < 0)
		die("bad sizes: channels 1..%d, window 1..%d", MAXCH, NBN_MAX_REQUESTS);
	if (argc >= 10) {
		g_ra = argv[7];
		g_rb = argv[8];
		g_reloads = atol(argv[9]);
	}
	int a[2], b[2];
	if (pipe(a) || pipe(b)) die("pipe");
	fflush(stdout);
	pid_t pid = fork(); /* before any library is loaded: a Go runtime does not survive fork */
	if (pid < 0) die("fork");
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		transfer(1, a[0], b[1], argv[2], version, nch, msgs, window);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	transfer(0, b[0], a[1], argv[2], version, nch, msgs, window);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("rank 1 failed (status %d)", st);
	return 0;
}

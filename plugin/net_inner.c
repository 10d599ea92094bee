/* SPDX-License-Identifier: MIT */
/*
 * net_inner.c: the plugin the net wrapper wraps (net.c watches it; net_exports.c exports it).
 *
 * The plugin that really moves the bytes is named by NCCLBPF_NET_PLUGIN (resolved as NCCL resolves
 * NCCL_NET_PLUGIN: the name itself, then libnccl-net-NAME.so, or a path) and loaded when this
 * library is. It may export any table NCCL 2.27 to 2.30 itself accepts, looked up newest first:
 * ncclNetPlugin_v12, _v11, _v10, _v9, _v8, _v7, _v6. The older ones (v6..v9) are given the v10 shape
 * once, at load, by adapters that do what NCCL's own do (net_abi.c; docs/nccl-net-abi.md, section
 * 7): no profiler callback, no connection configuration, no phandles; int sizes below v9 (an
 * isend/irecv of more than 1 GiB, a registration of 2 GiB or more below v8, is refused with
 * ncclInternalError without calling the plugin); fewer properties (the missing ones filled as NCCL
 * fills them); no device handles in v6 (NULL is returned) and no getDeviceMr, irecvConsumed or
 * makeVDevice where the version has none (absent from the exported tables too). Every call goes to
 * the inner plugin with the caller's arguments; comms, requests, memory handles and device handles
 * that NCCL holds are the inner plugin's own. When no inner plugin is configured or it fails to load
 * or init, init fails with one warning and NCCL moves on to its next net transport.
 *
 * Here: the load, the init (once per process or per communicator), the calls passed on unchanged,
 * and the inner plugin's properties in the widest (v12) structure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "net_internal.h"
#include "shim.h"
#include "loader.h"

union nbn_inner g_nbn_in;
int g_nbn_in_version;
int g_nbn_in_status = 2;
void *g_nbn_in_ctx10; /* made by the first init of an outer v8..v10 over an inner v11/v12 */
static char g_in_msg[512];
static void *g_in_dl;
static _Atomic int g_warned;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_in_inited10; /* inner v10 init done (outer v11/v12 calls it once per process) */

/* open_inner resolves name as NCCL resolves NCCL_NET_PLUGIN: the name as given, then, for a bare
 * name (no '/', not lib*.so), libnccl-net-NAME.so. */
static void *open_inner(const char *name, char *err, size_t n) {
	/* A path must name a regular file, as a policy file must: a FIFO would block dlopen until a writer
	 * comes, a device or a directory is no library. (A bare name is searched for by dlopen.) */
	if (strchr(name, '/')) {
		struct stat st;
		if (stat(name, &st) != 0) {
			snprintf(err, n, "%s", strerror(errno));
			return NULL;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, n, "not a regular file (%s)",
			         S_ISFIFO(st.st_mode)  ? "a FIFO"
			         : S_ISDIR(st.st_mode) ? "a directory"
			         : S_ISSOCK(st.st_mode) ? "a socket"
			         : S_ISCHR(st.st_mode)  ? "a character device"
			                                : "a special file");
			return NULL;
		}
	}
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h) return h;
	snprintf(err, n, "%s", dlerror());
	size_t len = strlen(name);
	int is_lib = strncmp(name, "lib", 3) == 0 || (len >= 3 && strcmp(name + len - 3, ".so") == 0);
	if (strchr(name, '/') || is_lib) return NULL;
	char alt[300];
	snprintf(alt, sizeof alt, "libnccl-net-%s.so", name);
	h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	if (!h) snprintf(err, n, "%s", dlerror());
	return h;
}


/* missing_member names a member every version must have and t lacks, or returns NULL. */
static const char *missing_member(const struct nbn_net_v10 *t) {
#define NEED(m)                                                                                                      \
	if (!t->m) return #m;
	NEED(init) NEED(devices) NEED(getProperties) NEED(listen_) NEED(connect_) NEED(accept) NEED(regMr) NEED(deregMr)
	NEED(isend) NEED(irecv) NEED(test) NEED(closeSend) NEED(closeRecv) NEED(closeListen)
#undef NEED
	return NULL;
}

static void load_inner(void) {
	const char *name = getenv("NCCLBPF_NET_PLUGIN");
	if (!name || !*name) {
		g_nbn_in_status = 1;
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN is not set: no net plugin to wrap; NCCL uses its next net transport");
		return;
	}
	char err[256] = "";
	void *h = open_inner(name, err, sizeof err);
	if (!h) {
		g_nbn_in_status = -1;
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s: cannot load it (%s); NCCL uses its next net transport", name, err);
		return;
	}
	static const char *syms[] = {"ncclNetPlugin_v12", "ncclNetPlugin_v11", "ncclNetPlugin_v10", "ncclNetPlugin_v9",
	                             "ncclNetPlugin_v8",  "ncclNetPlugin_v7",  "ncclNetPlugin_v6"};
	static const int vers[] = {12, 11, 10, 9, 8, 7, 6};
	for (int i = 0; i < 7; i++) {
		void *t = dlsym(h, syms[i]);
		if (!t) continue;
		if (t == (void *)&ncclNetPlugin_v12 || t == (void *)&ncclNetPlugin_v11 || t == (void *)&ncclNetPlugin_v10 ||
		    t == (void *)&ncclNetPlugin_v9 || t == (void *)&ncclNetPlugin_v8) {
			g_nbn_in_status = -1;
			snprintf(g_in_msg, sizeof g_in_msg,
			         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s is libncclbpf itself; name the plugin it should wrap", name);
			dlclose(h);
			return;
		}
		if (vers[i] <= 9)
			nbn_adapt_old(t, vers[i], &g_nbn_in.v10);
		else if (vers[i] == 10)
			memcpy(&g_nbn_in.v10, t, sizeof g_nbn_in.v10);
		else
			memcpy(&g_nbn_in.v11, t, sizeof g_nbn_in.v11);
		g_nbn_in_version = vers[i];
		break;
	}
	if (!g_nbn_in_version) {
		g_nbn_in_status = -1;
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s exports none of ncclNetPlugin_v12, _v11, _v10, _v9, _v8, _v7, _v6 "
		         "(the net ABIs NCCL accepts); NCCL uses its next net transport", name);
		dlclose(h);
		return;
	}
	const char *miss = missing_member(&g_nbn_in.v10);
	if (miss) {
		snprintf(g_in_msg, sizeof g_in_msg,
		         "ncclbpf: net: NCCLBPF_NET_PLUGIN=%s: its ncclNetPlugin_v%d has no %s; NCCL uses its next net transport",
		         name, g_nbn_in_version, miss);
		g_nbn_in_status = -1;
		g_nbn_in_version = 0;
		dlclose(h);
		return;
	}
	g_in_dl = h;
	g_nbn_in_status = 0;
	/* NCCL selects a net plugin by this name (NCCL_NET, the communicator's netName): present the
	 * wrapped plugin's. */
	if (g_nbn_in.v10.name)
		ncclNetPlugin_v10.name = ncclNetPlugin_v11.name = ncclNetPlugin_v12.name = ncclNetPlugin_v9.name =
		    ncclNetPlugin_v8.name = g_nbn_in.v10.name;
	snprintf(g_in_msg, sizeof g_in_msg, "ncclbpf: net: wrapping %s (net ABI v%d, \"%s\")", name, g_nbn_in_version,
	         g_nbn_in.v10.name ? g_nbn_in.v10.name : "");
	/* Optional members the inner plugin lacks are absent from ours too (NCCL tests them for NULL when
	 * it reads the table, before init). */
	struct nbn_net_v10 *o10 = &ncclNetPlugin_v10;
	struct nbn_net_v11 *o11[] = {&ncclNetPlugin_v11, &ncclNetPlugin_v12};
#define MIRROR(m)                                                                                                    \
	if (!g_nbn_in.v10.m) {                                                                                           \
		o10->m = NULL;                                                                                       \
		o11[0]->m = NULL;                                                                                    \
		o11[1]->m = NULL;                                                                                    \
		ncclNetPlugin_v9.m = NULL;                                                                           \
		ncclNetPlugin_v8.m = NULL;                                                                           \
	}
	MIRROR(regMrDmaBuf)
	MIRROR(getDeviceMr)
	MIRROR(irecvConsumed)
	MIRROR(makeVDevice)
	MIRROR(iflush)
#undef MIRROR
	if (g_nbn_in_version >= 11 && !g_nbn_in.v11.setNetAttr) ncclNetPlugin_v11.setNetAttr = ncclNetPlugin_v12.setNetAttr = NULL;
}

static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static void load_once(void) { load_inner(); }

/* names_self reports whether NCCL_NET_PLUGIN's value v (a comma-separated list of names or paths,
 * resolved as NCCL resolves them) names this library, i.e. whether NCCL will use it as its net plugin.
 * Unset, NCCL opens libnccl-net.so. */
static int names_self(const char *v) {
	Dl_info info;
	if (!dladdr((void *)&ncclNetPlugin_v10, &info) || !info.dli_fname) return 0;
	char self[PATH_MAX];
	if (!realpath(info.dli_fname, self)) return 0;
	const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
	if (!v || !*v) return strcmp(base, "libnccl-net.so") == 0;
	char list[4096];
	snprintf(list, sizeof list, "%s", v);
	char *save = NULL;
	for (char *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ') e++;
		char path[PATH_MAX], alt[300];
		if (strchr(e, '/')) {
			if (realpath(e, path) && strcmp(path, self) == 0) return 1;
			continue;
		}
		snprintf(alt, sizeof alt, "libnccl-net-%s.so", e);
		if (strcmp(e, base) == 0 || strcmp(alt, base) == 0) return 1;
	}
	return 0;
}

/* The inner plugin is loaded when the library is opened only by a process whose NCCL will use it as
 * its net plugin (NCCL_NET_PLUGIN names it): NCCL's adapters of old net ABIs copy the table's name and
 * optional members when they load it, before init, so they must be the inner plugin's by then. A
 * process that opens the library as its tuner or profiler only loads nothing more; should its NCCL
 * init the net side all the same, the first init loads the inner plugin (init_common). */
__attribute__((constructor)) static void nbn_ctor(void) {
	if (names_self(getenv("NCCL_NET_PLUGIN"))) pthread_once(&g_load_once, load_once);
}

/* init_common runs at every init: it reports a missing inner plugin once (WARN) and loads the policy,
 * reporting its outcome. */
static int init_common(int outer, nbn_logger_t log) {
	pthread_once(&g_load_once, load_once);
	int expect = 0;
	atomic_compare_exchange_strong(&g_nbn_outer_version, &expect, outer);
	if (log)
		ncclbpf_report_load((nb_loader_log_t)log);
	else
		ncclbpf_ensure_loaded();
	if (ncclbpf_strict_failed()) return -1;
	if (g_nbn_in_status != 0) {
		if (atomic_exchange(&g_warned, 1) == 0 && log) log(NBN_LOG_WARN, NBN_SUBSYS, __FILE__, __LINE__, "%s", g_in_msg);
		return -1;
	}
	int tables;
	size_t entries;
	if (!nbn_requests_ready(&tables, &entries)) {
		if (atomic_exchange(&g_warned, 1) == 0 && log)
			log(NBN_LOG_WARN, NBN_SUBSYS, __FILE__, __LINE__,
			    "ncclbpf: net: cannot map the request tables (%d of %zu entries, NCCLBPF_NET_REQUESTS); NCCL uses "
			    "its next net transport",
			    tables, entries);
		return -1;
	}
	if (atomic_exchange(&g_warned, 1) == 0 && log) log(NBN_LOG_INFO, NBN_SUBSYS, __FILE__, __LINE__, "%s", g_in_msg);
	return 0;
}

static void init_failed(nbn_logger_t log, int rc) {
	if (log)
		log(NBN_LOG_WARN, NBN_SUBSYS, __FILE__, __LINE__,
		    "ncclbpf: net: the wrapped plugin's init failed (error %d); NCCL uses its next net transport", rc);
}

/* ------------------------------------------------------------------------------------------------
 * Init and finalize. */

nbn_result_t nbn_init_comm(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
                           nbn_prof_cb_t prof, int outer) {
	if (init_common(outer, log) != 0) return NBN_INTERNAL_ERROR;
	struct nbn_ctx *w = calloc(1, sizeof *w);
	if (!w) return NBN_SYSTEM_ERROR;
	w->comm_id = commId;
	w->config.trafficClass = config ? config->trafficClass : -1;
	nbn_result_t rc;
	if (g_nbn_in_version >= 11) {
		rc = g_nbn_in.v11.init(&w->inner, commId, config, log, prof);
	} else {
		pthread_mutex_lock(&g_init_lock);
		rc = g_in_inited10 ? NBN_SUCCESS : g_nbn_in.v10.init(log, prof);
		if (rc == NBN_SUCCESS) g_in_inited10 = 1;
		pthread_mutex_unlock(&g_init_lock);
	}
	if (rc != NBN_SUCCESS) {
		init_failed(log, rc);
		free(w);
		return rc;
	}
	*ctx = w;
	return NBN_SUCCESS;
}

nbn_result_t nbn_init_process(nbn_logger_t log, nbn_prof_cb_t prof, int outer) {
	if (init_common(outer, log) != 0) return NBN_INTERNAL_ERROR;
	nbn_result_t rc = NBN_SUCCESS;
	pthread_mutex_lock(&g_init_lock);
	if (g_nbn_in_version >= 11) {
		if (!g_nbn_in_ctx10) {
			struct nbn_comm_config cfg = {-1};
			rc = g_nbn_in.v11.init(&g_nbn_in_ctx10, 0, &cfg, log, prof);
		}
	} else if (!g_in_inited10) {
		rc = g_nbn_in.v10.init(log, prof);
		if (rc == NBN_SUCCESS) g_in_inited10 = 1;
	}
	pthread_mutex_unlock(&g_init_lock);
	if (rc != NBN_SUCCESS) init_failed(log, rc);
	return rc;
}

nbn_result_t w_finalize(void *ctx) {
	struct nbn_ctx *w = ctx;
	nbn_result_t rc = NBN_SUCCESS;
	if (!w) return NBN_SUCCESS;
	if (g_nbn_in_version >= 11 && g_nbn_in.v11.finalize) rc = g_nbn_in.v11.finalize(w->inner);
	free(w);
	return rc;
}

nbn_result_t w_set_net_attr(void *ctx, struct nbn_net_attr *attr) {
	struct nbn_ctx *w = ctx;
	if (g_nbn_in_version >= 11 && g_nbn_in.v11.setNetAttr) return g_nbn_in.v11.setNetAttr(w ? w->inner : NULL, attr);
	return NBN_SUCCESS;
}

nbn_result_t w_devices(int *ndev) { return g_nbn_in.v10.devices(ndev); }

/* ------------------------------------------------------------------------------------------------
 * Properties. */

/* The wrapper's own view of a device is the v12 structure, the widest: what the inner
 * plugin reports is converted into it, and it into the caller's version (pass-through when the
 * two versions are the same). Fields a version lacks get the values NCCL's own adapters give them:
 * maxMultiRequestSize 1 below v11, railId/planeId NCCL_NET_ID_UNDEF below v12. v12's vProps holds 8
 * devices, not 4, so the fields after it are 16 bytes further on than in v9..v11. Not the data
 * path: NCCL reads properties while it sets up. */
nbn_result_t nbn_inner_props(int dev, struct nbn_props_v12 *c) {
	memset(c, 0, sizeof *c);
	c->maxMultiRequestSize = 1;
	c->railId = c->planeId = NBN_NET_ID_UNDEF;
	if (g_nbn_in_version == 12) return g_nbn_in.v10.getProperties(dev, c);
	struct nbn_props p; /* v10/v11; an inner plugin older than v10 is adapted to v10 (old_props) */
	memset(&p, 0, sizeof p);
	p.maxMultiRequestSize = 1; /* what a v10 (or older) plugin leaves there */
	nbn_result_t rc = g_nbn_in.v10.getProperties(dev, &p);
	if (rc != NBN_SUCCESS) return rc;
	memcpy(c, &p, offsetof(struct nbn_props, vProps)); /* the same layout up to vProps */
	c->vProps.ndevs = p.vProps.ndevs;
	memcpy(c->vProps.devs, p.vProps.devs, sizeof p.vProps.devs);
	c->maxP2pBytes = p.maxP2pBytes;
	c->maxCollBytes = p.maxCollBytes;
	c->maxMultiRequestSize = p.maxMultiRequestSize;
	return NBN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------------
 * Calls passed on unchanged. */

nbn_result_t w_regMr(void *comm, void *data, size_t size, int type, void **mhandle) {
	return g_nbn_in.v10.regMr(comm, data, size, type, mhandle);
}
nbn_result_t w_regMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                           void **mhandle) {
	return g_nbn_in.v10.regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
}
nbn_result_t w_deregMr(void *comm, void *mhandle) { return g_nbn_in.v10.deregMr(comm, mhandle); }
nbn_result_t w_iflush(void *recvComm, int n, void *data[], int *sizes, void **mhandles, void **request) {
	return g_nbn_in.v10.iflush(recvComm, n, data, sizes, mhandles, request);
}
nbn_result_t w_getDeviceMr(void *comm, void *mhandle, void **dptr) {
	return g_nbn_in.v10.getDeviceMr(comm, mhandle, dptr);
}
nbn_result_t w_irecvConsumed(void *recvComm, int n, void *request) {
	return g_nbn_in.v10.irecvConsumed(recvComm, n, request);
}

const char *ncclbpf_net_inner_message(void) { return g_in_msg; }

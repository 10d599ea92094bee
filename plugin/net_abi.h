/* SPDX-License-Identifier: MIT */
/*
 * net_abi.h: NCCL's net plugin ABI, versions 10, 11 and 12 (what the wrapper exports) and 6 to 9
 * (what an inner plugin may still export), as the wrapper (net.c) and the test hosts use it.
 * Written from the fact sheet docs/nccl-net-abi.md; layouts are LP64.
 *
 * The function tables of v10, v11 and v12 have the same members at the same offsets up to
 * makeVDevice; v11 and v12 add finalize and setNetAttr, and v11+ pass a per-communicator context
 * to listen and connect (v10 passes the communicator configuration to connect instead). v12
 * differs from v11 in its virtual-device structure (8 physical devices, not 4), hence in the
 * layout of its properties after vProps, and in the two int16 ids appended to them.
 */
#ifndef NCCLBPF_NET_ABI_H
#define NCCLBPF_NET_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int nbn_result_t; /* ncclResult_t: 0 success, 2 system error, 3 internal error, ... */
#define NBN_SUCCESS 0
#define NBN_SYSTEM_ERROR 2
#define NBN_INTERNAL_ERROR 3
#define NBN_INVALID_ARGUMENT 4

#define NBN_HANDLE_MAXSIZE 128 /* NCCL_NET_HANDLE_MAXSIZE: bytes of a listen handle */
#define NBN_MAX_DEVS_PER_NIC 4 /* NCCL_NET_MAX_DEVS_PER_NIC_V11: v9 to v11 */
#define NBN_MAX_DEVS_PER_NIC_V12 8
#define NBN_PTR_HOST 0x1
#define NBN_PTR_CUDA 0x2
#define NBN_PTR_DMABUF 0x4
#define NBN_MAX_REQUESTS 32 /* NCCL_NET_MAX_REQUESTS: outstanding requests per comm */
#define NBN_DEVICE_HOST 0            /* NCCL_NET_DEVICE_HOST: no device offload */
#define NBN_DEVICE_INVALID_VERSION 0 /* NCCL_NET_DEVICE_INVALID_VERSION */
#define NBN_NET_ID_UNDEF (-1)        /* NCCL_NET_ID_UNDEF: railId, planeId not known */

typedef void (*nbn_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
/* ncclProfilerCallback_t: passed through, never called by the wrapper. */
typedef nbn_result_t (*nbn_prof_cb_t)(void **eHandle, int type, void *pHandle, int64_t pluginId, void *extData);

/* ncclNetVDeviceProps_v9..v11_t */
struct nbn_vprops {
	int ndevs;
	int devs[NBN_MAX_DEVS_PER_NIC];
};
/* ncclNetVDeviceProps_v12_t */
struct nbn_vprops_v12 {
	int ndevs;
	int devs[NBN_MAX_DEVS_PER_NIC_V12];
};

struct nbn_comm_config {
	int trafficClass; /* -1: undefined */
};

/* ncclNetProperties_v10_t (and _v9_t) up to maxCollBytes; ncclNetProperties_v11_t with
 * maxMultiRequestSize. v12's is struct nbn_props_v12. */
struct nbn_props {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed; /* Mbps */
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType; /* enum: 0 host, 1 unpack, ... */
	int netDeviceVersion;
	struct nbn_vprops vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize; /* v11 */
};
#define NBN_PROPS_V10_SIZE offsetof(struct nbn_props, maxMultiRequestSize) /* v9 too */
#define NBN_PROPS_V11_SIZE sizeof(struct nbn_props)

/* ncclNetProperties_v12_t: v11's up to vProps, whose devs[] has 8 entries, so that the fields after
 * it move; then railId and planeId. */
struct nbn_props_v12 {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
	struct nbn_vprops_v12 vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
	int16_t railId, planeId; /* NCCL_NET_ID_UNDEF (-1): not known */
};

struct nbn_dev_handle { /* ncclNetDeviceHandle_v7..v12_t */
	int netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
};

struct nbn_net_attr; /* ncclNetAttr_v11_t: passed through */

#define NBN_COMMON_MEMBERS                                                                                     \
	nbn_result_t (*devices)(int *ndev);                                                                    \
	nbn_result_t (*getProperties)(int dev, void *props);                                                   \
	void *listen_;  /* version-specific, see below */                                                      \
	void *connect_;                                                                                        \
	nbn_result_t (*accept)(void *listenComm, void **recvComm, struct nbn_dev_handle **recvDevComm);        \
	nbn_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);                  \
	nbn_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,    \
	                            void **mhandle);                                                           \
	nbn_result_t (*deregMr)(void *comm, void *mhandle);                                                    \
	nbn_result_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,  \
	                      void **request);                                                                 \
	nbn_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,   \
	                      void **phandles, void **request);                                                \
	nbn_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request); \
	nbn_result_t (*test)(void *request, int *done, int *sizes);                                            \
	nbn_result_t (*closeSend)(void *sendComm);                                                             \
	nbn_result_t (*closeRecv)(void *recvComm);                                                             \
	nbn_result_t (*closeListen)(void *listenComm);                                                         \
	nbn_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);                           \
	nbn_result_t (*irecvConsumed)(void *recvComm, int n, void *request);                                   \
	nbn_result_t (*makeVDevice)(int *d, void *props); /* v10, v11: nbn_vprops; v12: nbn_vprops_v12 */

/* ncclNet_v10_t */
struct nbn_net_v10 {
	const char *name;
	nbn_result_t (*init)(nbn_logger_t log, nbn_prof_cb_t prof);
	NBN_COMMON_MEMBERS
};
typedef nbn_result_t (*nbn_listen_v10_t)(int dev, void *handle, void **listenComm);
typedef nbn_result_t (*nbn_connect_v10_t)(int dev, struct nbn_comm_config *config, void *handle, void **sendComm,
                                          struct nbn_dev_handle **sendDevComm);

/* ncclNet_v11_t and ncclNet_v12_t */
struct nbn_net_v11 {
	const char *name;
	nbn_result_t (*init)(void **ctx, uint64_t commId, struct nbn_comm_config *config, nbn_logger_t log,
	                     nbn_prof_cb_t prof);
	NBN_COMMON_MEMBERS
	nbn_result_t (*finalize)(void *ctx);
	nbn_result_t (*setNetAttr)(void *ctx, struct nbn_net_attr *attr);
};
typedef nbn_result_t (*nbn_listen_v11_t)(void *ctx, int dev, void *handle, void **listenComm);
typedef nbn_result_t (*nbn_connect_v11_t)(void *ctx, int dev, void *handle, void **sendComm,
                                          struct nbn_dev_handle **sendDevComm);

/* ---- net ABI v6..v9: tables an inner plugin may export (docs/nccl-net-abi.md, section 7) ---- */

#define NBN_MAX_NET_SIZE (1ull << 30)     /* MAX_NET_SIZE: the largest isend/irecv of an int-size ABI */
#define NBN_MAX_COLLNET_SIZE (512ull << 20) /* MAX_COLLNET_SIZE */
#define NBN_OPTIONAL_RECV_COMPLETION ((void *)1) /* NCCL_NET_OPTIONAL_RECV_COMPLETION, an irecv hint */
#define NBN_MAX_SUBS 64 /* NCCL_PROXY_MAX_SUBS: receives grouped in one irecv, at most */

/* ncclNetProperties_v6_t */
struct nbn_props_v6 {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
};
/* ncclNetProperties_v7_t: v6 and the device offload type */
struct nbn_props_v7 {
	struct nbn_props_v6 v6;
	int netDeviceType;
	int netDeviceVersion;
};
/* ncclNetProperties_v8_t: regIsGlobal inserted after ptrSupport */
struct nbn_props_v8 {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
};
/* ncclNetProperties_v9_t is ncclNetProperties_v10_t: struct nbn_props up to maxCollBytes. */

/*
 * The tables of v6..v9 in one structure: members keep their places from v6 to v9; v6 ends after
 * closeListen, v7 and v8 after irecvConsumed, v9 after makeVDevice. Members whose type changed
 * between these versions are void * here and called through the typedefs below.
 */
struct nbn_net_old {
	const char *name;
	nbn_result_t (*init)(nbn_logger_t log);
	nbn_result_t (*devices)(int *ndev);
	nbn_result_t (*getProperties)(int dev, void *props); /* nbn_props_v6/_v7/_v8, v9: nbn_props */
	nbn_result_t (*listen)(int dev, void *handle, void **listenComm);
	void *connect;  /* v6: nbn_connect_v6_t; v7..v9: nbn_connect_v7_t */
	void *accept;   /* v6: nbn_accept_v6_t; v7..v9: the v10 accept */
	void *regMr;    /* v6, v7: nbn_regmr_int_t; v8, v9: size_t size (the v10 regMr) */
	nbn_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
	                            void **mhandle);
	nbn_result_t (*deregMr)(void *comm, void *mhandle);
	void *isend;    /* v6..v8: nbn_isend_int_t; v9: nbn_isend_v9_t */
	void *irecv;    /* v6..v8: nbn_irecv_int_t; v9: nbn_irecv_v9_t */
	nbn_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	nbn_result_t (*test)(void *request, int *done, int *sizes);
	nbn_result_t (*closeSend)(void *sendComm);
	nbn_result_t (*closeRecv)(void *recvComm);
	nbn_result_t (*closeListen)(void *listenComm);
	/* v7+ */
	nbn_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nbn_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
	/* v9 */
	nbn_result_t (*makeVDevice)(int *d, void *props); /* struct nbn_vprops */
};
#define NBN_NET_V6_SIZE offsetof(struct nbn_net_old, getDeviceMr)
#define NBN_NET_V7_SIZE offsetof(struct nbn_net_old, makeVDevice) /* and v8 */
#define NBN_NET_V9_SIZE sizeof(struct nbn_net_old)
typedef nbn_result_t (*nbn_connect_v6_t)(int dev, void *handle, void **sendComm);
typedef nbn_result_t (*nbn_connect_v7_t)(int dev, void *handle, void **sendComm, struct nbn_dev_handle **sendDevComm);
typedef nbn_result_t (*nbn_accept_v6_t)(void *listenComm, void **recvComm);
typedef nbn_result_t (*nbn_accept_v7_t)(void *listenComm, void **recvComm, struct nbn_dev_handle **recvDevComm);
typedef nbn_result_t (*nbn_regmr_int_t)(void *comm, void *data, int size, int type, void **mhandle);
typedef nbn_result_t (*nbn_regmr_t)(void *comm, void *data, size_t size, int type, void **mhandle);
typedef nbn_result_t (*nbn_isend_int_t)(void *sendComm, void *data, int size, int tag, void *mhandle, void **request);
typedef nbn_result_t (*nbn_irecv_int_t)(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
                                        void **request);
typedef nbn_result_t (*nbn_isend_v9_t)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                                       void **request);
typedef nbn_result_t (*nbn_irecv_v9_t)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                                       void **request);

/* ---- layouts (LP64), as docs/nccl-net-abi.md lists them ---- */
#define NBN_AT(T, f, off) _Static_assert(offsetof(T, f) == (off), #T "." #f " at " #off)
#define NBN_SIZE(T, n) _Static_assert(sizeof(T) == (n), #T " is " #n " bytes")

NBN_SIZE(struct nbn_dev_handle, 32);
NBN_AT(struct nbn_dev_handle, handle, 8);
NBN_AT(struct nbn_dev_handle, needsProxyProgress, 24);

/* ncclNetProperties_v6_t .. _v8_t */
NBN_SIZE(struct nbn_props_v6, 48);
NBN_AT(struct nbn_props_v6, guid, 16);
NBN_AT(struct nbn_props_v6, ptrSupport, 24);
NBN_AT(struct nbn_props_v6, speed, 28);
NBN_AT(struct nbn_props_v6, port, 32);
NBN_AT(struct nbn_props_v6, latency, 36);
NBN_AT(struct nbn_props_v6, maxComms, 40);
NBN_AT(struct nbn_props_v6, maxRecvs, 44);
NBN_SIZE(struct nbn_props_v7, 56);
NBN_AT(struct nbn_props_v7, netDeviceType, 48);
NBN_AT(struct nbn_props_v7, netDeviceVersion, 52);
NBN_SIZE(struct nbn_props_v8, 64);
NBN_AT(struct nbn_props_v8, regIsGlobal, 28);
NBN_AT(struct nbn_props_v8, speed, 32);
NBN_AT(struct nbn_props_v8, port, 36);
NBN_AT(struct nbn_props_v8, latency, 40);
NBN_AT(struct nbn_props_v8, maxComms, 44);
NBN_AT(struct nbn_props_v8, maxRecvs, 48);
NBN_AT(struct nbn_props_v8, netDeviceType, 52);
NBN_AT(struct nbn_props_v8, netDeviceVersion, 56);

/* ncclNetProperties_v9_t = _v10_t (104 bytes), _v11_t (112) */
NBN_AT(struct nbn_props, regIsGlobal, 28);
NBN_AT(struct nbn_props, forceFlush, 32);
NBN_AT(struct nbn_props, speed, 36);
NBN_AT(struct nbn_props, port, 40);
NBN_AT(struct nbn_props, latency, 44);
NBN_AT(struct nbn_props, maxComms, 48);
NBN_AT(struct nbn_props, maxRecvs, 52);
NBN_AT(struct nbn_props, netDeviceType, 56);
NBN_AT(struct nbn_props, netDeviceVersion, 60);
NBN_AT(struct nbn_props, vProps, 64);
NBN_SIZE(struct nbn_vprops, 20);
NBN_AT(struct nbn_props, maxP2pBytes, 88);
NBN_AT(struct nbn_props, maxCollBytes, 96);
_Static_assert(NBN_PROPS_V10_SIZE == 104, "ncclNetProperties_v9_t and _v10_t are 104 bytes");
NBN_AT(struct nbn_props, maxMultiRequestSize, 104);
_Static_assert(NBN_PROPS_V11_SIZE == 112, "ncclNetProperties_v11_t is 112 bytes");

/* ncclNetProperties_v12_t (128 bytes) */
NBN_AT(struct nbn_props_v12, netDeviceVersion, 60);
NBN_AT(struct nbn_props_v12, vProps, 64);
NBN_SIZE(struct nbn_vprops_v12, 36);
NBN_AT(struct nbn_props_v12, maxP2pBytes, 104);
NBN_AT(struct nbn_props_v12, maxCollBytes, 112);
NBN_AT(struct nbn_props_v12, maxMultiRequestSize, 120);
NBN_AT(struct nbn_props_v12, railId, 124);
NBN_AT(struct nbn_props_v12, planeId, 126);
NBN_SIZE(struct nbn_props_v12, 128);

/* function tables */
NBN_AT(struct nbn_net_v10, connect_, 40);
NBN_AT(struct nbn_net_v10, isend, 80);
NBN_AT(struct nbn_net_v10, closeListen, 128);
NBN_AT(struct nbn_net_v10, makeVDevice, 152);
NBN_SIZE(struct nbn_net_v10, 160);
NBN_AT(struct nbn_net_v11, makeVDevice, 152);
NBN_AT(struct nbn_net_v11, finalize, 160);
NBN_SIZE(struct nbn_net_v11, 176);
NBN_AT(struct nbn_net_old, connect, 40);
NBN_AT(struct nbn_net_old, regMr, 56);
NBN_AT(struct nbn_net_old, isend, 80);
NBN_AT(struct nbn_net_old, irecv, 88);
NBN_AT(struct nbn_net_old, closeListen, 128);
NBN_AT(struct nbn_net_old, irecvConsumed, 144);
_Static_assert(NBN_NET_V6_SIZE == 136, "ncclNet_v6_t is 136 bytes");
_Static_assert(NBN_NET_V7_SIZE == 152, "ncclNet_v7_t and _v8_t are 152 bytes");
_Static_assert(NBN_NET_V9_SIZE == 160, "ncclNet_v9_t is 160 bytes");
#undef NBN_AT
#undef NBN_SIZE

/* nbn_adapt_old gives the inner plugin's table t of ABI v (6..9) the shape of v10 in *out, through
 * the adapters of net_abi.c (the wrapper's only; the test hosts do not call it). */
void nbn_adapt_old(const void *t, int v, struct nbn_net_v10 *out) __attribute__((visibility("hidden")));

#endif /* NCCLBPF_NET_ABI_H */

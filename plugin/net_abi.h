/* SPDX-License-Identifier: MIT */
/*
 * net_abi.h: NCCL's net plugin ABI, versions 10, 11 and 12, as the wrapper (net.c) and the test
 * hosts use it. Written from the fact sheet docs/nccl-net-abi.md; layouts are LP64.
 *
 * The function tables of v10, v11 and v12 have the same members at the same offsets up to
 * makeVDevice; v11 and v12 add finalize and setNetAttr, and v11+ pass a per-communicator context
 * to listen and connect (v10 passes the communicator configuration to connect instead). v12
 * differs from v11 only in the properties structure (two int16 ids appended), which the wrapper
 * never reads: it passes the caller's pointer through.
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
#define NBN_MAX_DEVS_PER_NIC 4
#define NBN_PTR_HOST 0x1
#define NBN_PTR_CUDA 0x2
#define NBN_PTR_DMABUF 0x4
#define NBN_MAX_REQUESTS 32 /* NCCL_NET_MAX_REQUESTS: outstanding requests per comm */

typedef void (*nbn_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
/* ncclProfilerCallback_t: passed through, never called by the wrapper. */
typedef nbn_result_t (*nbn_prof_cb_t)(void **eHandle, int type, void *pHandle, int64_t pluginId, void *extData);

struct nbn_vprops {
	int ndevs;
	int devs[NBN_MAX_DEVS_PER_NIC];
};

struct nbn_comm_config {
	int trafficClass; /* -1: undefined */
};

/* ncclNetProperties_v10_t (v11 appends maxMultiRequestSize, v12 then railId and planeId). */
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
	int maxMultiRequestSize; /* v11+ */
	int16_t railId, planeId; /* v12 */
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
	nbn_result_t (*makeVDevice)(int *d, struct nbn_vprops *props);

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

#endif /* NCCLBPF_NET_ABI_H */

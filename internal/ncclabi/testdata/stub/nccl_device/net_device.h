/* SPDX-License-Identifier: MIT */
/* Stand-in for NCCL's nccl_device/net_device.h (fact sheet section 3.3): the device-offload type
 * and handle, unchanged from net v7 to v12. These two are checked against the fact sheet, not
 * against NCCL's own header (the folder does not hold it). */
#pragma once
typedef enum { NCCL_NET_DEVICE_HOST = 0, NCCL_NET_DEVICE_UNPACK = 1 } ncclNetDeviceType;
typedef struct {
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t, ncclNetDeviceHandle_v9_t, ncclNetDeviceHandle_v10_t,
    ncclNetDeviceHandle_v11_t, ncclNetDeviceHandle_v12_t, ncclNetDeviceHandle_t;

/* SPDX-License-Identifier: MIT */
/*
 * Stand-in for NCCL's generated nccl.h, so that the plugin headers of ../shared/nccl-headers compile
 * without CUDA: only the types those headers use, written from the fact sheet (nccl-plugin-abi.md
 * section 0). Every one is a C enum (4 bytes on LP64), as in NCCL.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
typedef enum { ncclSuccess = 0, ncclNumResults = 9 } ncclResult_t;
typedef enum { ncclInt8 = 0, ncclNumTypes = 12 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;

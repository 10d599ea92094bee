/* Shared definitions for the loader's test objects. */
#ifndef LOADER_TEST_COMMON_H
#define LOADER_TEST_COMMON_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* A minimal stand-in for a hook context: r1 points at one of these. */
struct ctx {
	__u64 bytes;
	__u32 coll;
	__u32 nranks;
	__u32 algo;
	__u32 proto;
};

/* The pre-BTF map definition (libbpf 1.x no longer ships it). */
struct legacy_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

#endif

package main

/*
#include <stdlib.h>
#include "net.h"
#include "profiler.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
)

// netReadGroups maps each field of the net context to the group of fields
// (NCCLBPF_NET_R_*, net.h) the wrapper fills when a program reads it.
var netReadGroups = map[string]uint32{
	"comm_id": C.NCCLBPF_NET_R_IDS, "peer_key": C.NCCLBPF_NET_R_IDS, "conn_id": C.NCCLBPF_NET_R_IDS,
	"dev": C.NCCLBPF_NET_R_IDS, "bytes": C.NCCLBPF_NET_R_BYTES, "posted_bytes": C.NCCLBPF_NET_R_POSTED,
	"start_ns": C.NCCLBPF_NET_R_TIMES, "end_ns": C.NCCLBPF_NET_R_TIMES, "duration_ns": C.NCCLBPF_NET_R_TIMES,
	"flags": C.NCCLBPF_NET_R_FLAGS, "tag": C.NCCLBPF_NET_R_REQ, "n": C.NCCLBPF_NET_R_REQ,
	"kind": C.NCCLBPF_NET_R_CONST, "event": C.NCCLBPF_NET_R_CONST, "abi_version": C.NCCLBPF_NET_R_CONST,
	"reserved": C.NCCLBPF_NET_R_CONST, "local_seq": C.NCCLBPF_NET_R_SEQ,
}

// netReads returns the groups of net context fields p reads, as its
// verifier result lists them; a field with no group (none today) makes it
// all of them.
func netReads(p *bundle.Program) C.uint32_t {
	return C.uint32_t(readGroups(p, &hook.NetContext, netReadGroups, C.NCCLBPF_NET_R_ALL))
}

// publishNet points every net slot (net.c) at b's program for its hook, 0
// where b has none or b is nil. Like the profiler's slots, each slot is
// written once, straight from the old entry to the new one, so that a
// request that completes during a reload is seen by one policy's program,
// never by none. Caller holds mu.
func publishNet(b *bundle.Bundle) {
	var entries [C.NCCLBPF_NET_LAST_HOOK + 1]C.uintptr_t
	var reads [C.NCCLBPF_NET_LAST_HOOK + 1]C.uint32_t
	if b != nil {
		for _, p := range b.Programs {
			cname := C.CString(p.Hook.Name)
			id := C.ncclbpf_net_hook_id(cname)
			C.free(unsafe.Pointer(cname))
			if id >= C.NCCLBPF_NET_FIRST_HOOK && id <= C.NCCLBPF_NET_LAST_HOOK {
				entries[id] = C.uintptr_t(p.Entry())
				reads[id] = netReads(p)
			}
		}
	}
	for id := C.NCCLBPF_NET_FIRST_HOOK; id <= C.NCCLBPF_NET_LAST_HOOK; id++ {
		C.ncclbpf_net_publish(C.int(id), entries[id], reads[id])
	}
}

// profSync is the grace period of the observing slots, profiler and net
// (both wait for every calling thread that may still run code published
// before the call). It returns 0 when both are guaranteed, non-zero when
// either cannot be (no membarrier): then old code must never be freed.
func profSync() C.int {
	r1 := C.ncclbpf_prof_synchronize()
	r2 := C.ncclbpf_net_synchronize()
	if r1 != 0 || r2 != 0 {
		return -1
	}
	return 0
}

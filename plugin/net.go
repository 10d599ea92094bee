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
)

// publishNet points every net slot (net.c) at b's program for its hook,
// with its record (publishedRecord), none where b has none or b is nil.
// Like the profiler's slots, each slot is written once, straight from the
// old entry to the new one, so that a
// request that completes during a reload is seen by one policy's program,
// never by none. Caller holds mu.
func publishNet(b *bundle.Bundle) {
	var recs [C.NCCLBPF_NET_LAST_HOOK + 1]published
	if b != nil {
		for _, p := range b.Programs {
			cname := C.CString(p.Hook.Name)
			id := C.ncclbpf_net_hook_id(cname)
			C.free(unsafe.Pointer(cname))
			if id >= C.NCCLBPF_NET_FIRST_HOOK && id <= C.NCCLBPF_NET_LAST_HOOK {
				recs[id], _ = publishedRecord(p.Hook.Name, p) // a net record has no error
			}
		}
	}
	for id := C.NCCLBPF_NET_FIRST_HOOK; id <= C.NCCLBPF_NET_LAST_HOOK; id++ {
		C.ncclbpf_net_publish(C.int(id), &recs[id])
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

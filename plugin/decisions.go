package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "decisions.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/control"
)

// maxSnapshotComms bounds how many communicators one decisions request
// copies (each record is about 12 KiB).
const maxSnapshotComms = 256

// snapBuf is the C buffer the snapshots are copied into, reused from one
// call to the next (the ledger drains every 10 ms: a fresh buffer of
// ~12 KiB a communicator each time would be garbage for the C allocator
// a hundred times a second); guarded by snapMu.
var (
	snapMu  sync.Mutex
	snapBuf *C.struct_ncclbpf_comm_decisions
	snapCap int
)

// decisionRecords copies the live communicators' decision records
// (decisions.h); withRecent false leaves out the kept decisions.
func decisionRecords(withRecent bool) []control.CommDecisions {
	snapMu.Lock()
	defer snapMu.Unlock()
	n := max(snapCap, 16)
	for {
		if snapCap < n {
			size := C.size_t(n) * C.size_t(unsafe.Sizeof(C.struct_ncclbpf_comm_decisions{}))
			buf := (*C.struct_ncclbpf_comm_decisions)(C.calloc(1, size))
			if buf == nil {
				return nil
			}
			C.free(unsafe.Pointer(snapBuf))
			snapBuf, snapCap = buf, n
		}
		buf := snapBuf
		var live C.int
		got := int(C.ncclbpf_decisions_snapshot(buf, C.int(n), &live))
		if int(live) > n && n < maxSnapshotComms {
			n = min(int(live)+8, maxSnapshotComms)
			continue
		}
		recs := unsafe.Slice(buf, n)[:got]
		out := make([]control.CommDecisions, 0, got)
		for i := range recs {
			r := &recs[i]
			cd := control.CommDecisions{CommDigest: control.CommDigest{CommID: uint64(r.comm_id), NRanks: uint32(r.n_ranks),
				Seq: uint64(r.seq), Digest: uint64(r.digest), DigestSeq: -1}, KeptFrom: uint64(r.kept_from)}
			ring := r.ring[:r.n]
			if len(ring) > 0 {
				last := ring[len(ring)-1]
				cd.DigestSeq = int64(last.seq)
				cd.Digest = uint64(last.digest)
			}
			if withRecent {
				cd.Recent = make([]control.Decision, len(ring))
				for j, d := range ring {
					cd.Recent[j] = control.Decision{Seq: uint64(d.seq), Coll: int32(d.coll),
						Algorithm: int32(d.algorithm), Protocol: int32(d.protocol), Channels: int32(d.channels),
						Chunk: uint64(d.chunk), Digest: uint64(d.digest)}
				}
			}
			out = append(out, cd)
		}
		return out
	}
}

// commDigests are the digests `ncclbpf stats` shows.
func commDigests() []control.CommDigest {
	recs := decisionRecords(false)
	out := make([]control.CommDigest, len(recs))
	for i, r := range recs {
		out[i] = r.CommDigest
	}
	return out
}

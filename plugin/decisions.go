package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "decisions.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ncclbpf/ncclbpf/control"
)

// maxSnapshotComms bounds how many communicators one decisions request
// copies (each record is about 12 KiB).
const maxSnapshotComms = 256

// decisionRecords copies the live communicators' decision records
// (decisions.h); withRecent false leaves out the kept decisions.
func decisionRecords(withRecent bool) []control.CommDecisions {
	n := 16
	for {
		size := C.size_t(n) * C.size_t(unsafe.Sizeof(C.struct_ncclbpf_comm_decisions{}))
		buf := (*C.struct_ncclbpf_comm_decisions)(C.calloc(1, size))
		if buf == nil {
			return nil
		}
		var live C.int
		got := int(C.ncclbpf_decisions_snapshot(buf, C.int(n), &live))
		if int(live) > n && n < maxSnapshotComms {
			C.free(unsafe.Pointer(buf))
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
		C.free(unsafe.Pointer(buf))
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

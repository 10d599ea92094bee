package main

/*
#include <stddef.h>
#include "shim.h"
#include "profiler.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// Test entry points of hot reload, for the C test host
// (testhost/reload_hammer.c): the same path as the control socket's reload,
// without the socket.

// ncclbpfTestingReload reloads the policy object at path, at once (atSeq <
// 0) or from call sequence atSeq on (the activation then completes in the
// background: see ncclbpfTestingReloadPending). It writes a one-line
// message into msg and returns 0 on success, -1 on failure (the running
// policy unchanged), -2 when another reload is still in progress.
//
//export ncclbpfTestingReload
func ncclbpfTestingReload(path *C.char, atSeq C.longlong, msg *C.char, n C.size_t) C.int {
	name := C.GoString(path)
	text, rc := "", C.int(0)
	obj, err := os.ReadFile(name)
	if err == nil {
		req := reloadRequest{Name: name, Object: obj}
		if atSeq >= 0 {
			s := uint64(atSeq)
			req.AtSeq = &s
		}
		var res reloadResult
		res, err = reloadPolicy(req)
		if err == nil {
			text = fmt.Sprintf("reloaded %s: %s; publish %d ns, grace %d ns", name, res.Attached,
				res.Publish.Nanoseconds(), res.Grace.Nanoseconds())
		}
	}
	if err != nil {
		text, rc = err.Error(), -1
		if err == errReloadBusy {
			rc = -2
		}
	}
	if n > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(msg)), int(n))
		k := copy(b[:len(b)-1], text)
		b[k] = 0
	}
	return rc
}

// ncclbpfTestingReloadPending returns 1 while an at-seq reload waits for
// its activation, 0 otherwise.
//
//export ncclbpfTestingReloadPending
func ncclbpfTestingReloadPending() C.int {
	stateMu.Lock()
	defer stateMu.Unlock()
	if pending != nil {
		return 1
	}
	return 0
}

// ncclbpfTestingReloadStats stores the number of live bundles (loaded, not
// yet freed), successful and failed reloads, and the longest publish in
// nanoseconds.
//
//export ncclbpfTestingReloadStats
func ncclbpfTestingReloadStats(live, ok, failed, maxPublishNs *C.longlong) {
	stateMu.Lock()
	defer stateMu.Unlock()
	*live = C.longlong(liveBundles.Load())
	*ok = C.longlong(rstats.Reloads)
	*failed = C.longlong(rstats.Failures)
	*maxPublishNs = C.longlong(rstats.MaxPublish.Nanoseconds())
}

// ncclbpfTestingMapU64 reads the 8-byte value at index key of the running
// bundle's array map name into *out. Returns 0, or -1 (no such map, not an
// array of 8-byte values, index out of range).
//
//export ncclbpfTestingMapU64
func ncclbpfTestingMapU64(name *C.char, key C.uint, out *C.ulonglong) C.int {
	mu.Lock()
	b := current
	mu.Unlock()
	if b == nil {
		return -1
	}
	m := b.Map(C.GoString(name))
	if m == nil || m.Spec().ValueSize != 8 {
		return -1
	}
	k := []byte{byte(key), byte(key >> 8), byte(key >> 16), byte(key >> 24)}
	v, err := m.Lookup(k)
	if err != nil || len(v) < 8 {
		return -1
	}
	var x uint64
	for i := 7; i >= 0; i-- {
		x = x<<8 | uint64(v[i])
	}
	*out = C.ulonglong(x)
	return 0
}

// ncclbpfTestingPublishSumNs returns the total time of all successful
// publishes, in nanoseconds (with the reload count: the mean).
//
//export ncclbpfTestingPublishSumNs
func ncclbpfTestingPublishSumNs() C.longlong {
	stateMu.Lock()
	defer stateMu.Unlock()
	return C.longlong(rstats.SumPublish.Nanoseconds())
}

// ncclbpfTestingUnload empties every hook slot, waits for the grace
// periods and frees the running bundle, so that a leak checker run at exit
// sees no memory of ncclbpf still in use. Returns 0, -1 if a grace period
// was impossible (nothing freed).
//
//export ncclbpfTestingUnload
func ncclbpfTestingUnload() C.int {
	reloadMu.Lock()
	defer reloadMu.Unlock()
	mu.Lock()
	old := current
	publish(slotTuner, 0)
	publish(slotChunkSize, 0)
	for id := C.NCCLBPF_PROF_FIRST_HOOK; id <= C.NCCLBPF_PROF_LAST_HOOK; id++ {
		C.ncclbpf_prof_publish(C.int(id), 0)
	}
	current = nil
	mu.Unlock()
	if old == nil {
		return 0
	}
	if C.ncclbpf_slot_synchronize() != 0 || C.ncclbpf_prof_synchronize() != 0 {
		return -1
	}
	old.Close()
	if initialCounted {
		liveBundles.Add(-1)
	}
	return 0
}

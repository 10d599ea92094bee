//go:build ncclbpf_testing

// Test entry points of the library, exported only by test builds
// (go build -tags ncclbpf_testing): the production libncclbpf.so has none.

package main

/*
#include <stddef.h>
#include "shim.h"
#include "profiler.h"
#include "reload.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/bundle"

	"github.com/ncclbpf/ncclbpf/internal/config"
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
	obj, err := config.ReadRegularFile(name, config.MaxPolicyBytes)
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
	publishNet(nil)
	current = nil
	mu.Unlock()
	if old == nil {
		return 0
	}
	if C.ncclbpf_slot_synchronize() != 0 || profSync() != 0 {
		return -1
	}
	old.Close()
	if initialCounted {
		liveBundles.Add(-1)
	}
	return 0
}

// ncclbpfTestingEmptyTunerSlot empties the tuner slot for us microseconds
// and puts its entry back: a deliberate bug for the reload hammer's
// mutation test (a reload that leaves calls without a policy for a moment
// must make the hammer fail).
//
//export ncclbpfTestingEmptyTunerSlot
func ncclbpfTestingEmptyTunerSlot(us C.int) {
	mu.Lock()
	defer mu.Unlock()
	old := publish(slotTuner, 0)
	time.Sleep(time.Duration(us) * time.Microsecond)
	publish(slotTuner, old)
}

// ncclbpfTestingSwap loads the policy objects at pathA and pathB once
// (both taking the running bundle's compatible maps) and then swaps them n
// times, each swap a full publish (every hook slot) and the grace periods
// of a reload, as fast as it can: the long run of hot reload without the
// cost of verifying and compiling each time. The last swap leaves pathA's
// or pathB's bundle running, the other and the replaced one freed. It
// writes a one-line message and returns 0, or -1 on failure (nothing
// changed).
//
//export ncclbpfTestingSwap
func ncclbpfTestingSwap(pathA, pathB *C.char, n C.longlong, msg *C.char, size C.size_t) C.int {
	text, rc := swapBundles(C.GoString(pathA), C.GoString(pathB), int64(n))
	if size > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(msg)), int(size))
		k := copy(b[:len(b)-1], text)
		b[k] = 0
	}
	return C.int(rc)
}

func swapBundles(pathA, pathB string, n int64) (string, int) {
	C.ncclbpf_ensure_loaded()
	reloadMu.Lock()
	defer reloadMu.Unlock()
	mu.Lock()
	old := current
	mu.Unlock()
	if old == nil {
		return "swap: no policy running", -1
	}
	if !initialCounted {
		initialCounted = true
		liveBundles.Add(1)
	}
	var bs [2]*bundle.Bundle
	for i, p := range []string{pathA, pathB} {
		obj, err := config.ReadRegularFile(p, config.MaxPolicyBytes)
		if err == nil {
			bs[i], err = bundle.Load(obj, bundle.Options{Name: p, RequireNative: true, Reuse: old.Maps})
		}
		if err != nil {
			if bs[0] != nil {
				bs[0].Close()
			}
			return fmt.Sprintf("swap: %s: %v", p, err), -1
		}
	}
	liveBundles.Add(2)
	t0 := time.Now()
	var grace time.Duration
	var last int
	for i := int64(0); i < n; i++ {
		last = int(i % 2)
		if _, err := publishBundle(bs[last]); err != nil {
			return fmt.Sprintf("swap %d: %v", i, err), -1
		}
		g := time.Now()
		if C.ncclbpf_slot_synchronize() != 0 || profSync() != 0 {
			return "swap: no grace period possible (membarrier)", -1
		}
		grace += time.Since(g)
	}
	wall := time.Since(t0)
	if n == 0 {
		publishBundle(bs[0])
		C.ncclbpf_slot_synchronize()
		profSync()
	}
	// Both prebuilt bundles borrowed old's maps; the one running takes them
	// over, the other and old are freed (no slot points at them any more).
	bs[last].TakeOver(old)
	old.Close()
	bs[1-last].Close()
	liveBundles.Add(-2)
	stateMu.Lock()
	rstats.Reloads += uint64(n)
	stateMu.Unlock()
	per := time.Duration(0)
	if n > 0 {
		per = wall / time.Duration(n)
	}
	return fmt.Sprintf("swaps %d\nswap_wall_s %.2f\nper_swap_ns %d\ngrace_mean_ns %d", n, wall.Seconds(), per.Nanoseconds(),
		(grace / time.Duration(max(n, 1))).Nanoseconds()), 0
}

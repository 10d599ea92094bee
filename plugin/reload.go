package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "shim.h"
#include "profiler.h"
#include "reload.h"
*/
import "C"

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
)

// Hot reload (see docs/operators-guide.md):
//
//  1. the new object is loaded, verified and compiled on the caller's
//     goroutine (never an NCCL thread), offered the running bundle's maps:
//     those with the same name and definition are injected into the new
//     programs (the same map objects, so that updates the old programs make
//     until the switch are not lost), the others are created fresh;
//  2. the new entries are published to every hook slot (one atomic exchange
//     per slot; a call in flight finishes on the old code), or, for a reload
//     "at seq N", the tuner slots get a switch trampoline (reload.c) that
//     sends calls with call_seq >= N to the new code;
//  3. after a grace period of the tuner slots and of the profiler slots
//     (both must succeed), the replaced bundle's code and its maps that the
//     new one did not take over are freed. Without membarrier no grace period
//     is possible: the old bundle is then kept forever (counted as leaked).
//
// A failure in step 1 changes nothing. Reloads are serialized; an at-seq
// reload holds the lock until its activation completes.

// policyInfo describes a loaded policy object.
type policyInfo struct {
	Name     string
	SHA256   string
	Size     int
	LoadedAt time.Time
	obj      []byte
	// vars and data are the load options obj runs with (agreed updates
	// reload it with the same).
	vars []bundle.Var
	data map[string][]byte
}

func newPolicyInfo(name string, obj []byte) policyInfo {
	sum := sha256.Sum256(obj)
	return policyInfo{Name: name, SHA256: hex.EncodeToString(sum[:]), Size: len(obj), LoadedAt: time.Now(), obj: obj}
}

// activation is an at-seq reload waiting for every communicator to reach
// its sequence number.
type activation struct {
	AtSeq   uint64
	CommAt  map[uint64]uint64 // communicators with their own sequence (an activation manifest)
	Since   time.Time
	Timeout time.Duration
	// cancel, closed by a cancel request, withdraws the reload
	// (reload_cancel.go); done is closed when activate has returned.
	cancel, done chan struct{}
	// what running and previous were before the reload
	oldRunning  policyInfo
	oldPrevious *policyInfo
	// tx and prepareTTL: a two-phase switch (reloadRequest); epoch: the
	// ledger epoch marked for a plain one.
	tx         string
	prepareTTL time.Duration
	epoch      string
}

// reloadStats are the reload counters of the control plane.
type reloadStats struct {
	Reloads       uint64
	Failures      uint64
	LastError     string
	LastPublish   time.Duration // slots pointed at the new code
	LastGrace     time.Duration // grace periods before the old code was freed
	MaxPublish    time.Duration
	SumPublish    time.Duration
	Leaked        int    // replaced bundles never freed (no grace period possible)
	ForcedActive  uint64 // at-seq activations completed by their timeout
	LastActivated string
}

var (
	// reloadMu serializes reloads; an at-seq reload holds it until its
	// activation completes.
	reloadMu sync.Mutex
	// stateMu guards the variables below.
	stateMu  sync.Mutex
	running  policyInfo  // the object current was loaded from
	previous *policyInfo // the object running before the last reload (rollback)
	pending  *activation
	rstats   reloadStats
	// kept are replaced bundles that could not be freed.
	kept []*bundle.Bundle
	// liveBundles counts bundles loaded and not yet closed (from the first
	// reload on; initialCounted: the first load's bundle is included).
	liveBundles    atomic.Int64
	initialCounted bool
)

// noteInitial records the object the first load reads (load.go).
func noteInitial(name string, obj []byte) {
	stateMu.Lock()
	running = newPolicyInfo(name, obj)
	stateMu.Unlock()
}

// noteInitialOptions records the load options of the first load (load.go).
func noteInitialOptions(vars []bundle.Var, data map[string][]byte) {
	stateMu.Lock()
	running.vars, running.data = vars, data
	stateMu.Unlock()
}

// reloadRequest is what a reload needs.
type reloadRequest struct {
	Name    string // for messages and `ncclbpf ps`
	Object  []byte // ELF bytes
	Vars    []bundle.Var
	Data    map[string][]byte // whole globals (the rules table), as bundle.Options.Data
	AtSeq   *uint64           // nil: at once
	CommAt  map[uint64]uint64 // with AtSeq: communicators (by id) that switch at their own call
	Timeout time.Duration     // at-seq activation limit (0: 5 minutes)
	// fresh, if set, names running maps not to offer for reuse (agreed
	// maps an agreed update replaces with new copies).
	fresh func(*maps.Map) bool
	// prepare, if set, runs on the new bundle before it is published (it
	// fills the fresh agreed maps); an error abandons the reload.
	prepare func(nb, old *bundle.Bundle) error
	// sameObject: the reload runs the running object again (an agreed
	// update): what rollback would load stays as it was.
	sameObject bool
	// tx names a two-phase switch (twophase.go): the switch is armed with
	// its gate closed (prepared) and happens only once committed; a
	// prepared switch not committed within prepareTTL aborts itself.
	tx         string
	prepareTTL time.Duration
	// epoch is the ledger's id of the epoch the switch opens (plain
	// at-seq reloads; a two-phase switch's epoch is its tx).
	epoch string
}

// reloadResult describes a successful reload.
type reloadResult struct {
	Attached string
	Reused   []string
	Load     time.Duration // load + verify + compile
	Publish  time.Duration
	Grace    time.Duration // 0 for at-seq reloads (done later)
	Pending  bool          // at-seq: armed, switching when every communicator reaches AtSeq
	AtSeq    uint64
	SHA256   string
}

// errSeqPassed says that an at-seq reload named a sequence number some
// communicator has already passed.
var errSeqPassed = errors.New("sequence already passed")

// errReloadBusy says that another reload runs or waits for its activation.
var errReloadBusy = errors.New("another reload is in progress or waiting for its activation sequence; try again when it completes")

// trimmedError is an error whose message lost a leading prefix; it still
// wraps the original.
type trimmedError struct {
	msg string
	err error
}

func (e *trimmedError) Error() string { return e.msg }
func (e *trimmedError) Unwrap() error { return e.err }

// withoutPrefix returns err without prefix at the start of its message, so
// that a caller who adds the same context does not say it twice.
func withoutPrefix(err error, prefix string) error {
	if msg, ok := strings.CutPrefix(err.Error(), prefix); ok {
		return &trimmedError{msg, err}
	}
	return err
}

// reloadPolicy loads req's object and swaps it in. It never panics; an
// error leaves the running policy as it was and says why.
func reloadPolicy(req reloadRequest) (res reloadResult, err error) {
	if !reloadMu.TryLock() && !(awaitCompleting(completingWait) && reloadMu.TryLock()) {
		return res, errReloadBusy
	}
	handedOff := false
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
		if !handedOff {
			reloadMu.Unlock()
		}
		if err != nil {
			err = fmt.Errorf("reload %s: %w; the running policy is unchanged", req.Name, err)
			stateMu.Lock()
			rstats.Failures++
			rstats.LastError = err.Error()
			stateMu.Unlock()
		}
	}()
	if len(req.Object) == 0 {
		return res, errors.New("empty object")
	}
	// Make sure the first load has happened, or it would overwrite us later.
	C.ncclbpf_ensure_loaded()
	mu.Lock()
	old := current
	mu.Unlock()
	if !initialCounted {
		initialCounted = true
		if old != nil {
			liveBundles.Add(1) // the bundle of the first load
		}
	}
	var reuse []*maps.Map
	if old != nil {
		for _, m := range old.Maps {
			if req.fresh == nil || !req.fresh(m) {
				reuse = append(reuse, m)
			}
		}
	}
	t0 := time.Now()
	b, err := bundle.Load(req.Object, bundle.Options{Name: req.Name, RequireNative: true, Vars: req.Vars, Data: req.Data, Reuse: reuse})
	if err != nil {
		return res, withoutPrefix(err, req.Name+": ") // the deferred wrap names the policy
	}
	liveBundles.Add(1)
	if req.prepare != nil {
		if err := req.prepare(b, old); err != nil {
			b.Close()
			liveBundles.Add(-1)
			return res, err
		}
	}
	res.Load = time.Since(t0)
	res.Reused = b.Reused()
	info := newPolicyInfo(req.Name, req.Object)
	info.vars, info.data = req.Vars, req.Data
	res.SHA256 = info.SHA256

	if req.AtSeq == nil && len(req.CommAt) > 0 {
		err = errors.New("per-communicator activation without a default sequence")
	}
	if err == nil && len(req.CommAt) > int(C.NCCLBPF_RELOAD_MAX_COMMS) {
		err = fmt.Errorf("%d communicators with their own activation sequence; at most %d", len(req.CommAt),
			int(C.NCCLBPF_RELOAD_MAX_COMMS))
	}
	if err == nil && req.AtSeq != nil {
		// A communicator already at or past its sequence would switch late, at
		// the publish below, not with the other ranks: refuse (the window
		// between this check and the publish is a few microseconds).
		var min, max C.uint64_t
		n := C.ncclbpf_comms_seq_range(&min, &max)
		if herr := checkHorizon(*req.AtSeq, uint64(max), n, req.Timeout); herr != nil {
			err = herr
		} else if ck := checkAt(*req.AtSeq, req.CommAt); ck.late != 0 {
			err = fmt.Errorf("%w: communicator %#x has already made %d calls, at or past its activation seq %d; name a later sequence",
				errSeqPassed, uint64(ck.late_id), uint64(ck.late_seq), uint64(ck.late_at))
		}
	}
	if err != nil {
		b.Close()
		liveBundles.Add(-1)
		return res, err
	}
	t1 := time.Now()
	if req.AtSeq == nil {
		res.Attached, err = publishBundle(b)
	} else {
		if req.tx != "" {
			C.ncclbpf_gate_set(C.NCCLBPF_GATE_PREPARED)
		} else {
			C.ncclbpf_gate_set(C.NCCLBPF_GATE_OPEN)
			if req.epoch != "" {
				markEpoch(req.epoch, *req.AtSeq, req.CommAt)
			}
		}
		res.Attached, err = publishArmed(b, *req.AtSeq, req.CommAt)
		if err != nil && req.epoch != "" && req.tx == "" {
			unmarkEpoch(req.epoch)
		}
	}
	res.Publish = time.Since(t1)
	if err != nil {
		b.Close()
		liveBundles.Add(-1)
		return res, err
	}
	stateMu.Lock()
	prev := running
	oldPrevious := previous
	if prev.obj != nil && !req.sameObject {
		previous = &prev
	}
	running = info
	rstats.Reloads++
	rstats.LastPublish = res.Publish
	rstats.SumPublish += res.Publish
	if res.Publish > rstats.MaxPublish {
		rstats.MaxPublish = res.Publish
	}
	stateMu.Unlock()
	if req.AtSeq == nil {
		res.Grace = retire(old, b)
		return res, nil
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	act := &activation{AtSeq: *req.AtSeq, CommAt: req.CommAt, Since: time.Now(), Timeout: timeout, cancel: make(chan struct{}),
		done: make(chan struct{}), oldRunning: prev, oldPrevious: oldPrevious, tx: req.tx, prepareTTL: req.prepareTTL, epoch: req.epoch}
	stateMu.Lock()
	pending = act
	stateMu.Unlock()
	res.Pending, res.AtSeq = true, *req.AtSeq
	handedOff = true
	go activate(old, b, act)
	return res, nil
}

// completingWait bounds how long a reload waits for an earlier at-seq
// reload that has reached its activation and is only retiring the old
// policy (a grace period; its goroutine may lag on a loaded host).
const completingWait = 10 * time.Second

// awaitCompleting waits, at most d, for the pending at-seq reload to finish
// when every communicator has already reached its activation, and reports
// whether it finished. It returns false at once when no such reload is
// pending, or when the pending one still waits for its activation: a
// reload then is refused as busy, as it is during another immediate reload.
func awaitCompleting(d time.Duration) bool {
	stateMu.Lock()
	act := pending
	stateMu.Unlock()
	if act == nil || checkAt(act.AtSeq, act.CommAt).waiting != 0 {
		return false
	}
	select {
	case <-act.done:
		return true
	case <-time.After(d):
		return false
	}
}

// publishArmed is publishBundle for an at-seq reload: the tuner slots get
// switch trampolines, the profiler slots the new programs at once (they
// observe; the new tuner code finds their data in place at the switch).
func publishArmed(b *bundle.Bundle, at uint64, commAt map[uint64]uint64) (string, error) {
	ids, ats := commArrays(commAt)
	n := C.int(len(ids))
	var pid, pat *C.uint64_t
	if n > 0 {
		pid, pat = &ids[0], &ats[0]
	}
	return publishWith(b, func(tw, cw uintptr) error {
		if C.ncclbpf_reload_arm_comms(C.int(slotTuner), C.uintptr_t(tw), C.uint64_t(at), pid, pat, n) != 0 ||
			C.ncclbpf_reload_arm_comms(C.int(slotChunkSize), C.uintptr_t(cw), C.uint64_t(at), pid, pat, n) != 0 {
			C.ncclbpf_reload_finish(C.int(slotTuner))
			C.ncclbpf_reload_finish(C.int(slotChunkSize))
			return errors.New("a switch trampoline is still armed")
		}
		return nil
	})
}

// activate completes an at-seq reload: once every live communicator has
// made its call AtSeq (or the timeout), the tuner slots get the new entries
// themselves and the old bundle is retired.
func activate(old, b *bundle.Bundle, act *activation) {
	defer close(act.done) // after the unlock: a reload right after a cancel finds the lock free
	defer reloadMu.Unlock()
	deadline := act.Since.Add(act.Timeout)
	forced := false
	wait := 100 * time.Microsecond
	for {
		select {
		case <-act.cancel:
			withdraw(old, b, act, "cancelled")
			return
		default:
		}
		if act.tx != "" {
			// A two-phase switch: nothing completes before the commit.
			if why, undo := gateWait(act); undo {
				withdraw(old, b, act, why)
				return
			} else if why != "" {
				deadline = time.Now().Add(act.Timeout) // the wait for the activation starts at the commit
				time.Sleep(wait)
				continue
			}
		}
		if ck := checkAt(act.AtSeq, act.CommAt); ck.waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			forced = true
			break
		}
		time.Sleep(wait)
		if wait < 5*time.Millisecond {
			wait *= 2
		}
	}
	mu.Lock()
	C.ncclbpf_reload_finish(C.int(slotTuner))
	C.ncclbpf_reload_finish(C.int(slotChunkSize))
	mu.Unlock()
	retire(old, b)
	stateMu.Lock()
	pending = nil
	how := "every communicator reached it"
	if forced {
		rstats.ForcedActive++
		how = fmt.Sprintf("forced after the %v timeout: some communicator had not reached it", act.Timeout)
	}
	rstats.LastActivated = fmt.Sprintf("seq %d at %s (%s)", act.AtSeq, time.Now().UTC().Format(time.RFC3339), how)
	if act.tx != "" {
		lastTx = txRecord{tx: act.tx, state: control.TxSwitched, at: act.AtSeq}
	}
	stateMu.Unlock()
}

// commArrays lays out a per-communicator activation table for the shim
// (ids in increasing order).
func commArrays(commAt map[uint64]uint64) (ids, ats []C.uint64_t) {
	keys := make([]uint64, 0, len(commAt))
	for id := range commAt {
		keys = append(keys, id)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, id := range keys {
		ids = append(ids, C.uint64_t(id))
		ats = append(ats, C.uint64_t(commAt[id]))
	}
	return ids, ats
}

// checkAt compares the live communicators with an activation (reload.h).
func checkAt(at uint64, commAt map[uint64]uint64) C.struct_ncclbpf_at_check {
	ids, ats := commArrays(commAt)
	var pid, pat *C.uint64_t
	if len(ids) > 0 {
		pid, pat = &ids[0], &ats[0]
	}
	var ck C.struct_ncclbpf_at_check
	C.ncclbpf_comms_check_at(pid, pat, C.int(len(ids)), C.uint64_t(at), &ck)
	return ck
}

// retire waits until no thread can be inside old's code (tuner and
// profiler grace periods), then hands its reused maps to b and frees it.
func retire(old, b *bundle.Bundle) time.Duration {
	if old == nil {
		return 0
	}
	t := time.Now()
	r1 := C.ncclbpf_slot_synchronize()
	r2 := profSync()
	d := time.Since(t)
	stateMu.Lock()
	rstats.LastGrace = d
	if r1 != 0 || r2 != 0 {
		// No grace period possible (no membarrier): old code must never be freed.
		kept = append(kept, old)
		rstats.Leaked++
		stateMu.Unlock()
		return d
	}
	stateMu.Unlock()
	b.TakeOver(old)
	old.Close()
	liveBundles.Add(-1)
	return d
}

// describe lists what b attaches, as publishBundle does.
func describe(b *bundle.Bundle) string {
	var parts []string
	for _, p := range b.Programs {
		parts = append(parts, fmt.Sprintf("%s=%s", p.Hook.Name, p.Name))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

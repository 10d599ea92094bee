package main

/*
#include <stdint.h>
#include "shim.h"
#include "profiler.h"
#include "reload.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/control"
)

// Bounds of at-seq reloads. An armed reload holds the reload lock (no other
// reload, rollback or cost sampling runs) until every communicator reaches
// its sequence or its timeout passes, so both are bounded, and a cancel
// request withdraws it.

// checkHorizon refuses an activation sequence too far ahead of the
// furthest communicator (live > 0: there is one; max is its count) and a
// timeout over the limit.
func checkHorizon(at, max uint64, live C.int, timeout time.Duration) error {
	if timeout > time.Duration(control.MaxActivationTimeoutMS)*time.Millisecond {
		return fmt.Errorf("activation timeout %v is over the limit of %v", timeout,
			time.Duration(control.MaxActivationTimeoutMS)*time.Millisecond)
	}
	base := uint64(0)
	if live > 0 {
		base = max
	}
	if at > base && at-base > control.MaxSeqAhead {
		return fmt.Errorf("seq %d is %d calls ahead of the furthest communicator (at %d); at most %d may be: name a nearer sequence",
			at, at-base, base, uint64(control.MaxSeqAhead))
	}
	return nil
}

// errNothingArmed says that a cancel found no armed reload.
var errNothingArmed = errors.New("no armed reload to cancel (none was requested with an activation sequence, or it has completed)")

// cancelPending withdraws the armed at-seq reload and waits until the old
// policy runs again everywhere.
func cancelPending() (policyInfo, error) {
	stateMu.Lock()
	act := pending
	stateMu.Unlock()
	if act == nil {
		return policyInfo{}, errNothingArmed
	}
	select {
	case <-act.cancel:
	default:
		close(act.cancel)
	}
	select {
	case <-act.done:
	case <-time.After(10 * time.Second):
		return policyInfo{}, errors.New("cancel: the activation did not stop within 10s")
	}
	stateMu.Lock()
	defer stateMu.Unlock()
	return running, nil
}

// withdraw undoes an armed reload (on activate's goroutine, holding the
// reload lock): the tuner slots get the old entries back, the profiler
// slots the old programs, and after the grace periods the new bundle is
// freed; old keeps its maps (b only borrowed them).
func withdraw(old, b *bundle.Bundle, act *activation, why string) {
	mu.Lock()
	C.ncclbpf_reload_cancel(C.int(slotTuner))
	C.ncclbpf_reload_cancel(C.int(slotChunkSize))
	if old != nil {
		publishProfiler(old)
	} else {
		for id := C.NCCLBPF_PROF_FIRST_HOOK; id <= C.NCCLBPF_PROF_LAST_HOOK; id++ {
			C.ncclbpf_prof_publish(C.int(id), 0)
		}
		C.ncclbpf_prof_refresh_mask()
		publishNet(nil)
	}
	current = old
	mu.Unlock()
	stateMu.Lock()
	running, previous, pending = act.oldRunning, act.oldPrevious, nil
	rstats.LastActivated = fmt.Sprintf("seq %d withdrawn at %s (%s)", act.AtSeq, time.Now().UTC().Format(time.RFC3339), why)
	if act.tx != "" {
		lastTx = txRecord{tx: act.tx, state: txStateOf(int(C.ncclbpf_gate_get())), at: act.AtSeq, why: why}
		lastTx.lapseComm, lastTx.lapseSeq = gateLapse()
	}
	stateMu.Unlock()
	if act.epoch != "" {
		unmarkEpoch(act.epoch)
	}
	if act.tx != "" {
		unmarkEpoch(act.tx)
	}
	if C.ncclbpf_slot_synchronize() != 0 || profSync() != 0 {
		stateMu.Lock()
		kept = append(kept, b)
		rstats.Leaked++
		stateMu.Unlock()
		return
	}
	b.Close()
	liveBundles.Add(-1)
}

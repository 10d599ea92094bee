package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "decisions.h"
#include "reload.h"
uint64_t ncclbpf_env_digest(void);
*/
import "C"

import (
	"sync"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

// The decision ledger (control/ledger.go) of this process: a goroutine of
// the control plane drains the communicators' decision records every
// ledgerPeriod (and before answering a ledger request) into block sums and
// the last decisions, so that `ncclbpf check` can name the first divergent
// call long after it left the 256 calls the shared-memory record keeps.
// It reads what the hot path writes (decisions.h); NCCL's threads never
// wait for it.

const ledgerPeriod = 10 * time.Millisecond

var (
	ledgerMu  sync.Mutex
	ledgerVal *control.Ledger
)

// theLedger returns the ledger; the caller holds ledgerMu.
func theLedger() *control.Ledger {
	if ledgerVal == nil {
		ledgerVal = control.NewLedger("start")
	}
	return ledgerVal
}

func markEpoch(id string, at uint64, commAt map[uint64]uint64) {
	ledgerMu.Lock()
	theLedger().MarkEpoch(id, at, commAt)
	ledgerMu.Unlock()
}

func unmarkEpoch(id string) {
	ledgerMu.Lock()
	theLedger().UnmarkEpoch(id)
	ledgerMu.Unlock()
}

// lastRange is the communicators' progress at the last drain, lastDrain
// its time: a periodic drain is skipped while nothing moved (at most for
// ledgerIdle), so that an idle process makes no garbage.
var (
	lastRange [3]uint64
	lastDrain time.Time
)

// ledgerIdle is the longest a periodic drain is skipped while the
// communicators' progress looks unchanged (one may move while the
// smallest and largest counts stay).
const ledgerIdle = time.Second

// drainLedger folds the current decision records into the ledger; with
// periodic, it does nothing while no communicator moved.
func drainLedger(periodic bool) {
	var lo, hi C.uint64_t
	n := C.ncclbpf_comms_seq_range(&lo, &hi)
	if periodic {
		r := [3]uint64{uint64(n), uint64(lo), uint64(hi)}
		if r == lastRange && time.Since(lastDrain) < ledgerIdle {
			return
		}
		lastRange, lastDrain = r, time.Now()
	}
	if n == 0 {
		ledgerMu.Lock()
		theLedger().Ingest(nil)
		ledgerMu.Unlock()
		return
	}
	recs := decisionRecords(true)
	ledgerMu.Lock()
	theLedger().Ingest(recs)
	ledgerMu.Unlock()
}

// runLedger drains the records until the process exits.
func runLedger() {
	for {
		drainLedger(true)
		time.Sleep(ledgerPeriod)
	}
}

// ledgerView answers OpLedger.
func ledgerView(req *control.LedgerQuery) *control.Response {
	var id *uint64
	if req.Comm != "" {
		v, err := control.ParseCommKey(req.Comm)
		if err != nil {
			return &control.Response{Error: err.Error()}
		}
		id = &v
	}
	drainLedger(false)
	ledgerMu.Lock()
	v := theLedger().View(id, req.RecordsFrom, req.RecordsTo)
	ledgerMu.Unlock()
	env := uint64(C.ncclbpf_env_digest())
	for i := range v {
		v[i].EnvDigest = env
	}
	return &control.Response{Ledger: v}
}

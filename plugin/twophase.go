package main

/*
#include <stdint.h>
#include "reload.h"
*/
import "C"

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/maps"
)

// Two-phase switching: the process side of `ncclbpf agree` and
// `ncclbpf reload --all --at-seq` (control/twophase.go is the coordinator).
//
//   - prepare: the reload or agreed update is loaded, verified and compiled
//     as an at-seq reload is, and armed at its call N with the gate of the
//     switch trampolines closed (reload.h): a call at or past N runs the old
//     program and, the first time, lapses the switch for good. Refused when
//     a communicator is at or past N already, or another reload is pending;
//   - commit: the gate opens (one compare-and-swap): the process switches at
//     exactly call N, or the commit fails because a call reached N first
//     (lapsed: it never switches, and says at which communicator and call);
//   - abort: the gate closes for good, unless a call already ran the new
//     policy (switched: the abort fails, and says so). A prepared switch
//     that no commit reaches within its prepare time aborts itself, so a
//     coordinator that dies leaves nothing armed.
//
// Nothing here runs on NCCL's threads; the trampolines read the gate with
// one atomic load, and only while a switch is armed.

// txRecord is the outcome of the last two-phase switch (after its
// activation goroutine finished), for commit and abort requests that come
// late or twice.
type txRecord struct {
	tx, state           string
	at                  uint64
	why                 string
	lapseComm, lapseSeq uint64
}

// lastTx is guarded by stateMu.
var lastTx txRecord

func txStateOf(g int) string {
	switch g {
	case C.NCCLBPF_GATE_PREPARED:
		return control.TxPrepared
	case C.NCCLBPF_GATE_COMMITTED:
		return control.TxCommitted
	case C.NCCLBPF_GATE_SWITCHED, C.NCCLBPF_GATE_OPEN:
		return control.TxSwitched
	case C.NCCLBPF_GATE_LAPSED:
		return control.TxLapsed
	}
	return control.TxAborted
}

func gateLapse() (uint64, uint64) {
	var comm, seq C.uint64_t
	C.ncclbpf_gate_lapse(&comm, &seq)
	return uint64(comm), uint64(seq)
}

// gateWait is activate's view of a two-phase switch's gate: why it is not
// committed yet (empty: committed), and whether the switch must be undone.
func gateWait(act *activation) (why string, undo bool) {
	switch g := int(C.ncclbpf_gate_get()); g {
	case C.NCCLBPF_GATE_COMMITTED, C.NCCLBPF_GATE_SWITCHED:
		return "", false
	case C.NCCLBPF_GATE_PREPARED:
		if time.Since(act.Since) < act.prepareTTL {
			return "waiting for the commit", false
		}
		if int(C.ncclbpf_gate_cas(C.NCCLBPF_GATE_PREPARED, C.NCCLBPF_GATE_ABORTED)) == C.NCCLBPF_GATE_PREPARED {
			return fmt.Sprintf("aborted: no commit within %v of the prepare", act.prepareTTL), true
		}
		return "waiting for the commit", false
	case C.NCCLBPF_GATE_LAPSED:
		comm, seq := gateLapse()
		return fmt.Sprintf("lapsed: communicator %#x reached call %d before the commit", comm, seq), true
	default:
		return "aborted", true
	}
}

func txResponse(tx, state string, at uint64) *control.Response {
	r := &control.TxResult{Tx: tx, State: state, AtSeq: at}
	var lo, hi C.uint64_t
	if C.ncclbpf_comms_seq_range(&lo, &hi) > 0 {
		r.SeqMax = uint64(hi)
	}
	if state == control.TxLapsed {
		r.LapseComm, r.LapseSeq = gateLapse()
	}
	return &control.Response{Tx: r}
}

// prepareSwitch stages a two-phase switch (OpPrepare).
func prepareSwitch(req *control.Prepare) *control.Response {
	stateMu.Lock()
	act := pending
	stateMu.Unlock()
	if act != nil && act.tx == req.Tx {
		return txResponse(req.Tx, txStateOf(int(C.ncclbpf_gate_get())), act.AtSeq) // asked twice
	}
	ttl := time.Duration(req.PrepareMS) * time.Millisecond
	if ttl <= 0 {
		ttl = control.DefaultPrepareMS * time.Millisecond
	}
	r := reloadRequest{AtSeq: req.AtSeq, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, tx: req.Tx, prepareTTL: ttl}
	if len(req.CommAtSeq) > 0 {
		r.CommAt = map[uint64]uint64{}
		for k, v := range req.CommAtSeq {
			id, err := control.ParseCommKey(k)
			if err != nil {
				return &control.Response{Error: "prepare: comm_at_seq: " + err.Error()}
			}
			r.CommAt[id] = v
		}
	}
	if len(req.Object) > 0 {
		if len(req.Object) > config.MaxPolicyBytes {
			return &control.Response{Error: fmt.Sprintf("prepare %s: object of %d bytes, over the limit of %d", req.Name, len(req.Object), config.MaxPolicyBytes)}
		}
		if err := checkAllowed(req.Object); err != nil {
			return &control.Response{Error: fmt.Sprintf("prepare %s: %v", req.Name, err)}
		}
		r.Name, r.Object = req.Name, req.Object
		if r.Name == "" {
			r.Name = "reloaded policy"
		}
		if req.Vars != "" {
			vars, err := config.ParseVars(req.Vars)
			if err != nil {
				return &control.Response{Error: fmt.Sprintf("prepare %s: vars: %v", r.Name, err)}
			}
			for _, v := range vars {
				r.Vars = append(r.Vars, bundle.Var{Name: v.Name, Value: v.Value})
			}
		}
	} else {
		m, err := runningMap(req.Map)
		if err != nil {
			return &control.Response{Error: "prepare: " + err.Error()}
		}
		if !isAgreed(m) {
			return &control.Response{Error: fmt.Sprintf("prepare: map %s is not an agreed map (NCCLBPF_AGREED)", req.Map)}
		}
		kvs, err := decodeEntries(m, req.Entries)
		if err != nil {
			return &control.Response{Error: "prepare: " + err.Error()}
		}
		stateMu.Lock()
		cur := running
		stateMu.Unlock()
		if cur.obj == nil {
			return &control.Response{Error: "prepare: the running policy is a builtin or unknown object; nothing to reload"}
		}
		target := req.Map
		r.Name, r.Object, r.Vars, r.Data, r.sameObject = cur.Name, cur.obj, cur.vars, cur.data, true
		r.fresh = func(m *maps.Map) bool { return isAgreed(m) }
		r.prepare = func(nb, old *bundle.Bundle) error { return fillAgreed(nb, old, target, kvs) }
	}
	if _, err := reloadPolicy(r); err != nil {
		return &control.Response{Error: "prepare: " + err.Error()}
	}
	return txResponse(req.Tx, control.TxPrepared, *req.AtSeq)
}

// errNoTx says that a commit or abort names no switch this process knows.
var errNoTx = errors.New("no such prepared switch here (never prepared, or another one since)")

// commitSwitch opens the gate of the prepared switch tx (OpCommit).
func commitSwitch(tx string) *control.Response {
	stateMu.Lock()
	act, last := pending, lastTx
	stateMu.Unlock()
	if act == nil || act.tx != tx {
		if last.tx == tx {
			if last.state == control.TxSwitched {
				return txResponse(tx, last.state, last.at)
			}
			return &control.Response{Error: fmt.Sprintf("commit %s: %s (%s)", tx, last.state, last.why)}
		}
		return &control.Response{Error: fmt.Sprintf("commit %s: %v", tx, errNoTx)}
	}
	// The epoch is marked under the ledger's lock, with the gate moved: the
	// drainer cannot pass the activation call in between.
	ledgerMu.Lock()
	g := int(C.ncclbpf_gate_cas(C.NCCLBPF_GATE_PREPARED, C.NCCLBPF_GATE_COMMITTED))
	if g == C.NCCLBPF_GATE_PREPARED {
		theLedger().MarkEpoch(act.tx, act.AtSeq, act.CommAt)
	}
	ledgerMu.Unlock()
	switch g {
	case C.NCCLBPF_GATE_PREPARED, C.NCCLBPF_GATE_COMMITTED:
		return txResponse(tx, control.TxCommitted, act.AtSeq)
	case C.NCCLBPF_GATE_SWITCHED:
		return txResponse(tx, control.TxSwitched, act.AtSeq)
	case C.NCCLBPF_GATE_LAPSED:
		comm, seq := gateLapse()
		return &control.Response{Error: fmt.Sprintf("commit %s: lapsed: communicator %#x reached call %d (the activation call %d) before the commit; this process keeps its policy",
			tx, comm, seq, act.AtSeq)}
	}
	return &control.Response{Error: fmt.Sprintf("commit %s: aborted (no commit came within %v of the prepare, or an abort came first)", tx, act.prepareTTL)}
}

// abortSwitch closes the gate of switch tx for good and waits until the
// old policy runs alone again (OpAbort).
func abortSwitch(tx string) *control.Response {
	stateMu.Lock()
	act, last := pending, lastTx
	stateMu.Unlock()
	if act == nil || act.tx != tx {
		if last.tx == tx && last.state == control.TxSwitched {
			return &control.Response{Error: fmt.Sprintf("abort %s: already switched at call %d", tx, last.at)}
		}
		// Never prepared here, or already undone: nothing to abort.
		return txResponse(tx, control.TxAborted, 0)
	}
	ledgerMu.Lock()
	g := int(C.ncclbpf_gate_cas(C.NCCLBPF_GATE_PREPARED, C.NCCLBPF_GATE_ABORTED))
	if g == C.NCCLBPF_GATE_COMMITTED {
		g = int(C.ncclbpf_gate_cas(C.NCCLBPF_GATE_COMMITTED, C.NCCLBPF_GATE_ABORTED))
	}
	if g == C.NCCLBPF_GATE_PREPARED || g == C.NCCLBPF_GATE_COMMITTED {
		theLedger().UnmarkEpoch(act.tx)
	}
	ledgerMu.Unlock()
	if g == C.NCCLBPF_GATE_SWITCHED {
		return &control.Response{Error: fmt.Sprintf("abort %s: already switched: a call at or past %d ran the new policy", tx, act.AtSeq)}
	}
	select {
	case <-act.done:
	case <-time.After(10 * time.Second):
		return &control.Response{Error: fmt.Sprintf("abort %s: the switch did not come undone within 10s", tx)}
	}
	state := control.TxAborted
	if g == C.NCCLBPF_GATE_LAPSED {
		state = control.TxLapsed
	}
	return txResponse(tx, state, act.AtSeq)
}

// epochName names the epoch a plain at-seq switch opens: the same on every
// process given the same object (or agreed entries) and call.
func epochName(kind string, data []byte, at uint64) string {
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s %s@%d", kind, hex.EncodeToString(sum[:6]), at)
}

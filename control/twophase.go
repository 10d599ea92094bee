package control

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The coordinator of a two-phase switch (`ncclbpf agree`, `ncclbpf reload
// --all --at-seq`): every expected rank prepares (checks that its
// communicators are before the activation call and stages the switch);
// only when every one said yes is the switch committed on all, otherwise
// every rank that may have prepared is told to abort. A rank that does not
// answer in time, or dies, aborts the round. A rank that prepared and then
// hears nothing aborts by itself when its prepare time runs out.
//
// Ranks are reached through a Rank: a local control socket (SocketRank),
// or a job's store (store.go).

// Rank is one process taking part in a switch.
type Rank interface {
	// Name is how the operator knows the rank ("pid 4242", "node-a pid 4242").
	Name() string
	// Call sends req and waits at most timeout for the answer.
	Call(req Payload, timeout time.Duration) (*Response, error)
}

// SocketRank is a process of this host, by its control socket.
type SocketRank struct {
	Label, Path string
}

// Name implements Rank.
func (s SocketRank) Name() string { return s.Label }

// Call implements Rank.
func (s SocketRank) Call(req Payload, timeout time.Duration) (*Response, error) {
	c, err := dialTimeout(s.Path, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.Timeout = timeout
	return c.Call(req)
}

// NewTxID returns a fresh switch id.
func NewTxID() string {
	var b [8]byte
	rand.Read(b[:])
	return "tx-" + hex.EncodeToString(b[:])
}

// RankOutcome is what one rank answered in a round.
type RankOutcome struct {
	Name     string `json:"name"`
	Prepared bool   `json:"prepared"`
	State    string `json:"state"`           // its last known TxResult.State
	SeqMax   uint64 `json:"seq_max"`         // the furthest call it reported
	Error    string `json:"error,omitempty"` // why it did not prepare, commit or abort
}

// SwitchResult is the outcome of a two-phase switch.
type SwitchResult struct {
	Tx        string        `json:"tx"`
	AtSeq     uint64        `json:"at_seq"`
	Committed bool          `json:"committed"`
	Ranks     []RankOutcome `json:"ranks"`
	// Reason says why the round aborted.
	Reason string `json:"reason,omitempty"`
	// Switched names ranks that switched although the round aborted (a
	// rank lapsed after others had switched): they decide differently from
	// the others from AtSeq on.
	Switched []string `json:"switched,omitempty"`
	// PrepareNS and CommitNS are the durations of the two phases.
	PrepareNS int64 `json:"prepare_ns"`
	CommitNS  int64 `json:"commit_ns"`
}

// SwitchOptions bound a round.
type SwitchOptions struct {
	// Timeout bounds each rank's answer in each phase (default 10s).
	Timeout time.Duration
	// Decide, when set, records the round's decision (DecisionCommit or
	// DecisionAbort) once for all before any rank hears it, and returns the
	// decision recorded (another coordinator's, if it came first): the
	// commit is sent only if the commit was recorded.
	Decide func(tx, decision string) (string, error)
	// BusyUntil, when set, is how long a prepare refused by a rank still
	// completing an earlier switch (its answer says BusyText) is asked
	// again, every 2 ms: the ranks that said so, together.
	BusyUntil time.Time
}

// BusyText is in the answer of a rank still completing an earlier switch
// (its activation not yet passed) to a prepare.
const BusyText = "another reload is in progress"

// Decisions of a round as Decide records them.
const (
	DecisionCommit = "commit"
	DecisionAbort  = "abort"
)

// TwoPhase runs one switch over ranks: prep is the OpPrepare request (Tx,
// AtSeq, and the object or the agreed entries; Tx is set if empty).
func TwoPhase(ranks []Rank, prep *Prepare, o SwitchOptions) SwitchResult {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if prep.Tx == "" {
		prep.Tx = NewTxID()
	}
	p := *prep
	res := SwitchResult{Tx: p.Tx, Ranks: make([]RankOutcome, len(ranks))}
	if p.AtSeq != nil {
		res.AtSeq = *p.AtSeq
	}
	if len(ranks) == 0 {
		res.Reason = "no rank to switch"
		return res
	}
	t0 := time.Now()
	for i, r := range ranks {
		res.Ranks[i].Name = r.Name()
	}
	ask := ranks
	at := make([]int, len(ranks)) // ask[j] is ranks[at[j]]
	for i := range at {
		at[i] = i
	}
	for len(ask) > 0 {
		var busy []int
		callAll(ask, &p, o.Timeout, func(j int, resp *Response, err error) {
			out := &res.Ranks[at[j]]
			switch {
			case err != nil:
				out.Error = err.Error()
				if strings.Contains(out.Error, BusyText) && time.Now().Before(o.BusyUntil) {
					busy = append(busy, at[j])
				}
			case resp.Tx == nil || resp.Tx.State != TxPrepared:
				out.Error = "no prepared state in the answer"
			default:
				out.Prepared, out.State, out.SeqMax, out.Error = true, resp.Tx.State, resp.Tx.SeqMax, ""
			}
		})
		if len(busy) > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		ask, at = nil, busy
		for _, i := range busy {
			ask = append(ask, ranks[i])
		}
	}
	res.PrepareNS = time.Since(t0).Nanoseconds()
	var refused []string
	for _, r := range res.Ranks {
		if !r.Prepared {
			refused = append(refused, fmt.Sprintf("%s: %s", r.Name, r.Error))
		}
	}
	if len(refused) > 0 {
		res.Reason = fmt.Sprintf("%d of %d ranks did not prepare:\n  %s", len(refused), len(ranks), strings.Join(refused, "\n  "))
		if o.Decide != nil {
			o.Decide(p.Tx, DecisionAbort)
		}
		abortAll(ranks, &res, p.Tx, o.Timeout)
		return res
	}
	if o.Decide != nil {
		got, err := o.Decide(p.Tx, DecisionCommit)
		if err != nil || got != DecisionCommit {
			if err == nil {
				err = fmt.Errorf("the store holds the decision %q", got)
			}
			res.Reason = fmt.Sprintf("every rank prepared, but the commit could not be recorded in the store: %v", err)
			abortAll(ranks, &res, p.Tx, o.Timeout)
			return res
		}
	}
	t1 := time.Now()
	c := Commit{Tx: p.Tx}
	var failed []string
	callAll(ranks, &c, o.Timeout, func(i int, resp *Response, err error) {
		out := &res.Ranks[i]
		if err == nil && resp.Tx != nil && (resp.Tx.State == TxCommitted || resp.Tx.State == TxSwitched) {
			out.State = resp.Tx.State
			return
		}
		if err == nil {
			err = errors.New("no committed state in the answer")
		}
		out.Error = err.Error()
		failed = append(failed, fmt.Sprintf("%s: %v", out.Name, err))
	})
	res.CommitNS = time.Since(t1).Nanoseconds()
	if len(failed) == 0 {
		res.Committed = true
		return res
	}
	sort.Strings(failed)
	res.Reason = fmt.Sprintf("%d of %d ranks did not commit:\n  %s", len(failed), len(ranks), strings.Join(failed, "\n  "))
	abortAll(ranks, &res, p.Tx, o.Timeout)
	return res
}

// abortAll tells every rank to abort tx and notes those that could not
// (already switched).
func abortAll(ranks []Rank, res *SwitchResult, tx string, timeout time.Duration) {
	a := Abort{Tx: tx}
	for i, r := range ranks {
		res.Ranks[i].Name = r.Name()
	}
	callAll(ranks, &a, timeout, func(i int, resp *Response, err error) {
		out := &res.Ranks[i]
		if err != nil {
			if strings.Contains(err.Error(), "already switched") {
				res.Switched = append(res.Switched, out.Name)
				out.State = TxSwitched
			} else if out.Error == "" {
				out.Error = "abort: " + err.Error()
			}
			return
		}
		if resp.Tx != nil && out.State != "" {
			out.State = resp.Tx.State
		}
	})
	sort.Strings(res.Switched)
}

package control

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Decision is one tuner decision a communicator recorded: what the policy
// decided for the getCollInfo call Seq (Chunk 0: no chunk size set) and the
// rolling digest of all its decisions up to and including this one. Calls
// left to NCCL are counted, not recorded (every rank gets NCCL's own choice
// there), except when a chunk program set their chunk size: then Algorithm
// and Protocol are -1 and Channels 0. The record keeps
// algorithm and protocol modulo 256 and channels saturated to 255, and not
// the collective's size; the digest covers all of them in full.
type Decision struct {
	Seq       uint64 `json:"seq"`
	Coll      int32  `json:"coll"`
	Algorithm int32  `json:"algorithm"`
	Protocol  int32  `json:"protocol"`
	Channels  int32  `json:"channels"`
	Chunk     uint64 `json:"chunk"`
	Digest    uint64 `json:"digest"`
	// Term is this call's own part of the digest (the digest is a sum of
	// one term per decision): set in ledger records.
	Term uint64 `json:"term,omitempty"`
}

// Same reports whether d and o decided alike (the digests aside).
func (d Decision) Same(o Decision) bool {
	return d.Seq == o.Seq && d.Coll == o.Coll && d.Algorithm == o.Algorithm &&
		d.Protocol == o.Protocol && d.Channels == o.Channels && d.Chunk == o.Chunk
}

// String formats d for people: "seq 41: coll 4 -> algorithm 1, protocol 2, 16 channels, chunk 0".
func (d Decision) String() string {
	if d.Algorithm == -1 && d.Protocol == -1 && d.Channels == 0 && d.Chunk == 0 {
		return fmt.Sprintf("seq %d: coll %d -> left to NCCL", d.Seq, d.Coll)
	}
	return fmt.Sprintf("seq %d: coll %d -> algorithm %d, protocol %d, %d channels, chunk %d", d.Seq, d.Coll,
		d.Algorithm, d.Protocol, d.Channels, d.Chunk)
}

// CommDigest is a communicator's digest, as `ncclbpf stats` shows it.
type CommDigest struct {
	CommID uint64 `json:"comm_id"`
	NRanks uint32 `json:"n_ranks"`
	Seq    uint64 `json:"seq"`    // getCollInfo calls so far
	Digest uint64 `json:"digest"` // after the last recorded decision
	// DigestSeq is the seq of the last recorded decision (-1: none yet).
	DigestSeq int64 `json:"digest_seq"`
}

// CommDecisions is a communicator's decision record: its digest and the
// last decisions it kept (oldest first).
type CommDecisions struct {
	CommDigest
	// KeptFrom is the first call the record covers: a call from KeptFrom on
	// without a decision in Recent was left to NCCL (or ran no program).
	KeptFrom uint64     `json:"kept_from"`
	Recent   []Decision `json:"recent"`
}

// Participant is one process's record of one communicator, for Compare.
type Participant struct {
	PID int
	CommDecisions
}

// Verdict is the outcome of Compare.
type Verdict struct {
	// Consistent: every participant decided alike on every compared call
	// and their digests agree there (so also on every earlier call).
	Consistent bool
	// Comparable is false when the participants' kept windows do not
	// overlap: nothing could be compared.
	Comparable bool
	// From and Through are the calls compared (the common window).
	From, Through uint64
	// Divergences lists, for each participant that differs from the
	// reference (the first), where.
	Divergences []Divergence
}

// Divergence is where one participant first decided unlike the reference.
type Divergence struct {
	RefPID, PID int
	// Seq is the first call decided differently (decision or digest: a
	// call whose recorded decision is the same but whose digest differs had
	// another collective size); Before is true when the digests already
	// differ at the window's start with the same decision there: the first
	// difference is earlier than Seq, outside what the ranks kept.
	// AtOrBefore is true when Seq is the window's first call: the
	// decisions differ there, and earlier ones are not kept.
	Seq        uint64
	Before     bool
	AtOrBefore bool
	// Ref and Other are both decisions at Seq (when kept).
	Ref, Other *Decision
}

// settled is the last seq whose record is final: the decision of call
// seq-1 may still get its chunk size until the next call.
func settled(c CommDecisions) (uint64, bool) {
	if c.Seq < 2 {
		return 0, false
	}
	return c.Seq - 2, true
}

// Compare compares the records of one communicator taken from several
// processes. The first participant is the reference. Calls are compared
// over the window every participant still keeps, excluding the last call
// of each (its chunk size may still come).
func Compare(ps []Participant) (Verdict, error) {
	if len(ps) < 2 {
		return Verdict{}, fmt.Errorf("compare: want at least two processes of the communicator, have %d", len(ps))
	}
	idx := make([]map[uint64]Decision, len(ps))
	var lo, hi uint64
	hi = ^uint64(0)
	for i, p := range ps {
		last, ok := settled(p.CommDecisions)
		if !ok {
			return Verdict{}, nil // nothing settled on this one: not comparable
		}
		idx[i] = map[uint64]Decision{}
		for _, d := range p.Recent {
			if d.Seq >= p.KeptFrom && d.Seq <= last {
				idx[i][d.Seq] = d
			}
		}
		lo = max(lo, p.KeptFrom)
		hi = min(hi, last)
	}
	v := Verdict{From: lo, Through: hi}
	if lo > hi {
		return v, nil
	}
	v.Comparable = true
	ref := idx[0]
	for i := 1; i < len(ps); i++ {
		// The first call where the decisions or the digests (which also cover
		// the collective's size and everything before) differ. A call neither
		// recorded was left to NCCL by both.
		var div *Divergence
		first := true // no decision compared yet: everything before was left to NCCL
		for s := lo; s <= hi && div == nil; s++ {
			a, okA := ref[s]
			b, okB := idx[i][s]
			if !okA && !okB {
				continue
			}
			if okA && okB && a.Same(b) && a.Digest == b.Digest {
				first = false
				continue
			}
			div = &Divergence{RefPID: ps[0].PID, PID: ps[i].PID, Seq: s}
			if okA {
				div.Ref = &a
			}
			if okB {
				div.Other = &b
			}
			switch {
			case first && okA && okB && a.Same(b):
				// Same decision, other digest, and nothing differed since the
				// window's start: the difference is older than the window.
				div.Before, div.Ref, div.Other = true, nil, nil
			case s == lo:
				// Nothing kept before: the difference may be older.
				div.AtOrBefore = true
			}
		}
		if div != nil {
			v.Divergences = append(v.Divergences, *div)
		}
	}
	v.Consistent = len(v.Divergences) == 0
	return v, nil
}

// GroupByComm groups the records of several processes by communicator id
// (ids in increasing order; processes in the order given).
func GroupByComm(byPID map[int][]CommDecisions) ([]uint64, map[uint64][]Participant) {
	pids := make([]int, 0, len(byPID))
	for pid := range byPID {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	groups := map[uint64][]Participant{}
	for _, pid := range pids {
		for _, c := range byPID[pid] {
			groups[c.CommID] = append(groups[c.CommID], Participant{PID: pid, CommDecisions: c})
		}
	}
	ids := make([]uint64, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, groups
}

// FormatDivergence describes dv for people.
func FormatDivergence(dv Divergence) string {
	var b strings.Builder
	switch {
	case dv.Before:
		fmt.Fprintf(&b, "pid %d diverged from pid %d before seq %d (the decisions kept agree, the digests do not: the first difference is older than the %d decisions kept)",
			dv.PID, dv.RefPID, dv.Seq, 256)
		return b.String()
	case dv.AtOrBefore:
		fmt.Fprintf(&b, "pid %d diverged from pid %d at or before seq %d (the oldest decision both kept)", dv.PID, dv.RefPID, dv.Seq)
	default:
		fmt.Fprintf(&b, "pid %d diverged from pid %d first at seq %d", dv.PID, dv.RefPID, dv.Seq)
	}
	side := func(pid int, d *Decision) {
		if d == nil {
			fmt.Fprintf(&b, "\n  pid %d: seq %d: left to NCCL (no decision recorded)", pid, dv.Seq)
		} else {
			fmt.Fprintf(&b, "\n  pid %d: %s", pid, d)
		}
	}
	side(dv.RefPID, dv.Ref)
	side(dv.PID, dv.Other)
	return b.String()
}

// ParseCommKey reads a communicator id written in hex ("0x7f3a" or "7f3a").
func ParseCommKey(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("communicator id %q: want hex", s)
	}
	return v, nil
}

// CommKey writes a communicator id as ParseCommKey reads it.
func CommKey(id uint64) string { return fmt.Sprintf("%#x", id) }

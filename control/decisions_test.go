package control

import (
	"strings"
	"testing"
)

// rec builds a record of calls from..to (inclusive) with seq count to+2
// (all of them settled), deciding algo(seq) and folding a toy digest.
func rec(pid int, from, to uint64, algo func(uint64) int32) Participant {
	var d uint64
	p := Participant{PID: pid, CommDecisions: CommDecisions{CommDigest: CommDigest{CommID: 7, Seq: to + 2}, KeptFrom: from}}
	for s := uint64(0); s <= to; s++ {
		a := algo(s)
		d = d*31 + s*7 + uint64(a)
		if s >= from {
			p.Recent = append(p.Recent, Decision{Seq: s, Coll: 4, Algorithm: a, Protocol: 2, Channels: 8, Digest: d})
		}
	}
	return p
}

func same(uint64) int32 { return 1 }

func TestCompareConsistent(t *testing.T) {
	v, err := Compare([]Participant{rec(1, 100, 355, same), rec(2, 110, 360, same), rec(3, 90, 350, same)})
	if err != nil || !v.Comparable || !v.Consistent || v.From != 110 || v.Through != 350 {
		t.Fatalf("identical ranks: %+v %v", v, err)
	}
}

// A decision that differs from call 200 on: the first divergent call is
// named with both decisions. Mutation caught: comparing only digests (the
// call would be reported as the window start).
func TestCompareFirstDivergence(t *testing.T) {
	odd := func(s uint64) int32 {
		if s >= 200 {
			return 0
		}
		return 1
	}
	v, err := Compare([]Participant{rec(1, 100, 355, same), rec(2, 100, 355, same), rec(3, 100, 355, odd)})
	if err != nil || !v.Comparable || v.Consistent || len(v.Divergences) != 1 {
		t.Fatalf("%+v %v", v, err)
	}
	dv := v.Divergences[0]
	if dv.PID != 3 || dv.RefPID != 1 || dv.Seq != 200 || dv.Before || dv.AtOrBefore || dv.Ref.Algorithm != 1 || dv.Other.Algorithm != 0 {
		t.Fatalf("divergence: %+v", dv)
	}
	if s := FormatDivergence(dv); !strings.Contains(s, "first at seq 200") || !strings.Contains(s, "algorithm 0") {
		t.Fatalf("format: %s", s)
	}
}

// Decisions differ only before the window both keep: the digests tell.
// Mutation caught: ignoring the digests (reports consistent).
func TestCompareDivergedBeforeWindow(t *testing.T) {
	early := func(s uint64) int32 {
		if s == 5 {
			return 0
		}
		return 1
	}
	v, _ := Compare([]Participant{rec(1, 100, 355, same), rec(2, 100, 355, early)})
	if v.Consistent || len(v.Divergences) != 1 || !v.Divergences[0].Before || v.Divergences[0].Seq != 100 {
		t.Fatalf("%+v", v)
	}
}

// Same recorded decision, different digest from call 250 on (the
// collective's size differed there): the first divergent call is 250.
// Mutation caught: comparing only the recorded fields in the window.
func TestCompareDigestOnlyDifference(t *testing.T) {
	a, b := rec(1, 100, 355, same), rec(2, 100, 355, same)
	for i := range b.Recent {
		if b.Recent[i].Seq >= 250 {
			b.Recent[i].Digest ^= 1
		}
	}
	v, _ := Compare([]Participant{a, b})
	if v.Consistent || len(v.Divergences) != 1 || v.Divergences[0].Seq != 250 || v.Divergences[0].Before {
		t.Fatalf("%+v", v)
	}
}

func TestCompareNoOverlap(t *testing.T) {
	v, err := Compare([]Participant{rec(1, 0, 100, same), rec(2, 300, 555, same)})
	if err != nil || v.Comparable || v.Consistent {
		t.Fatalf("disjoint windows: %+v %v", v, err)
	}
	if _, err := Compare([]Participant{rec(1, 0, 100, same)}); err == nil {
		t.Fatal("one participant compared")
	}
}

// The last call of a process is not compared (its chunk size may come).
func TestCompareUnsettledTail(t *testing.T) {
	a, b := rec(1, 0, 100, same), rec(2, 0, 100, same)
	b.Recent[100].Chunk = 4096 // call 100 got its chunk size on rank 2 only
	a.Seq, b.Seq = 101, 101    // call 100 is the last made: not settled
	v, _ := Compare([]Participant{a, b})
	if !v.Consistent || v.Through != 99 {
		t.Fatalf("%+v", v)
	}
}

func TestGroupByComm(t *testing.T) {
	ids, g := GroupByComm(map[int][]CommDecisions{
		5: {{CommDigest: CommDigest{CommID: 9}}, {CommDigest: CommDigest{CommID: 3}}},
		2: {{CommDigest: CommDigest{CommID: 9}}},
	})
	if len(ids) != 2 || ids[0] != 3 || ids[1] != 9 || len(g[9]) != 2 || g[9][0].PID != 2 || g[9][1].PID != 5 {
		t.Fatalf("%v %+v", ids, g)
	}
}

// sparse builds a record that keeps calls from..to but holds decisions only
// for the calls decide says were decided (the others were left to NCCL),
// with the digest summing only those.
func sparse(pid int, from, to uint64, decide func(uint64) bool) Participant {
	var d uint64
	p := Participant{PID: pid, CommDecisions: CommDecisions{CommDigest: CommDigest{CommID: 7, Seq: to + 2}, KeptFrom: from}}
	for s := uint64(0); s <= to; s++ {
		if !decide(s) {
			continue
		}
		d += s*7 + 1
		if s >= from {
			p.Recent = append(p.Recent, Decision{Seq: s, Coll: 4, Algorithm: 1, Protocol: 2, Digest: d})
		}
	}
	return p
}

// Calls left to NCCL are not recorded: a rank that left every call to NCCL
// and one that decided from call 200 on diverge at 200 (not "not
// comparable"); ranks that decide on the same calls agree; a decision both
// made with digests that differ since before the window is "before".
// Mutations caught: requiring a record on every participant (not
// comparable), taking the window's start from the first record (200
// reported as "at or before"), marking "before" only at the window's first
// call.
func TestCompareCallsLeftToNCCL(t *testing.T) {
	never := func(uint64) bool { return false }
	from200 := func(s uint64) bool { return s >= 200 }
	v, err := Compare([]Participant{sparse(1, 100, 355, never), sparse(2, 100, 355, from200)})
	if err != nil || !v.Comparable || v.Consistent || len(v.Divergences) != 1 {
		t.Fatalf("left to NCCL vs decided: %+v %v", v, err)
	}
	dv := v.Divergences[0]
	if dv.Seq != 200 || dv.AtOrBefore || dv.Before || dv.Ref != nil || dv.Other == nil {
		t.Fatalf("divergence: %+v", dv)
	}
	if s := FormatDivergence(dv); !strings.Contains(s, "pid 1: seq 200: left to NCCL") || !strings.Contains(s, "first at seq 200") {
		t.Fatalf("format: %s", s)
	}
	v, err = Compare([]Participant{sparse(1, 100, 355, from200), sparse(2, 110, 360, from200), sparse(3, 90, 350, from200)})
	if err != nil || !v.Comparable || !v.Consistent || v.From != 110 || v.Through != 350 {
		t.Fatalf("same decisions on the same calls: %+v %v", v, err)
	}
	v, err = Compare([]Participant{sparse(1, 100, 355, never), sparse(2, 100, 355, never)})
	if err != nil || !v.Comparable || !v.Consistent {
		t.Fatalf("every call left to NCCL on both: %+v %v", v, err)
	}
	// Rank 2 also decided call 50, before the window: the first decision
	// both kept (call 200) agrees, its digest does not.
	v, err = Compare([]Participant{sparse(1, 100, 355, from200), sparse(2, 100, 355, func(s uint64) bool { return s == 50 || s >= 200 })})
	if err != nil || v.Consistent || len(v.Divergences) != 1 || !v.Divergences[0].Before || v.Divergences[0].Seq != 200 {
		t.Fatalf("older difference: %+v %v", v, err)
	}
}

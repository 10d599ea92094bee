package control

import (
	"fmt"
	"strings"
	"testing"
)

// simRank simulates one rank's decision record: decide gives the channel
// count of each call (0: left to NCCL); the digest is the sum of one term
// per decision, as decisions_fold.h computes it (any injective-enough mix
// will do here).
type simRank struct {
	name   string
	decide func(seq uint64) int32
	ledger *Ledger
	seq    uint64 // calls made
	digest uint64
	ring   map[uint64]Decision
}

func term(seq uint64, ch int32) uint64 {
	return seq*0x9e3779b97f4a7c15 ^ uint64(ch)*0xc2b2ae3d27d4eb4f ^ 0x165667b19e3779f9
}

func newSim(name string, decide func(uint64) int32) *simRank {
	return &simRank{name: name, decide: decide, ledger: NewLedger("load test"), ring: map[uint64]Decision{}}
}

// run makes calls up to n (exclusive), draining the record into the ledger
// every `every` calls.
func (r *simRank) run(n uint64, every uint64) {
	for ; r.seq < n; r.seq++ {
		if ch := r.decide(r.seq); ch != 0 {
			r.digest += term(r.seq, ch)
			r.ring[r.seq] = Decision{Seq: r.seq, Coll: 4, Algorithm: 1, Protocol: 2, Channels: ch, Digest: r.digest}
		}
		delete(r.ring, r.seq-256)
		if (r.seq+1)%every == 0 {
			r.drain()
		}
	}
	r.drain()
}

func (r *simRank) drain() {
	cd := CommDecisions{CommDigest: CommDigest{CommID: 7, NRanks: 3, Seq: r.seq, Digest: r.digest}}
	if r.seq > 256 {
		cd.KeptFrom = r.seq - 256
	}
	for s := cd.KeptFrom; s+2 <= r.seq; s++ {
		if d, ok := r.ring[s]; ok {
			cd.Recent = append(cd.Recent, d)
		}
	}
	r.ledger.Ingest([]CommDecisions{cd})
}

func checkSims(t *testing.T, rs []*simRank) LedgerVerdict {
	t.Helper()
	ms := make([]Member, len(rs))
	for i, r := range rs {
		ms[i] = Member{Name: r.name, LedgerView: r.ledger.View(nil, 0, 0)[0]}
	}
	v, err := CheckLedgers(ms, func(a, b uint64) ([][]Decision, error) {
		out := make([][]Decision, len(rs))
		for i, r := range rs {
			out[i] = r.ledger.View(nil, a, b)[0].Records
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func steady(uint64) int32 { return 5 }

// TestLedgerNamesTheFirstDivergentCall: rank c decides differently from
// call 1035 on, every fifth call; checked thousands of calls later (the
// 256 calls of the shared-memory ring long gone), the first divergent call
// named is exactly 1035, with both decisions.
func TestLedgerNamesTheFirstDivergentCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first uint64
		odd   func(uint64) bool
	}{
		{"once", 777, func(s uint64) bool { return s == 777 }},
		{"periodic", 1035, func(s uint64) bool { return s >= 1035 && (s-1035)%5 == 0 }},
		{"from-then-on", 64 * 9, func(s uint64) bool { return s >= 64*9 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newSim("pid 1", steady), newSim("pid 2", steady)
			c := newSim("pid 3", func(s uint64) int32 {
				if tc.odd(s) {
					return 9
				}
				return 5
			})
			rs := []*simRank{a, b, c}
			for _, r := range rs {
				r.run(5000, 100)
			}
			v := checkSims(t, rs)
			if v.Agree || v.Divergence == nil || !v.Divergence.Exact || v.Divergence.Seq != tc.first {
				t.Fatalf("verdict %+v; want the first divergence at call %d", v, tc.first)
			}
			txt := FormatFirstDivergence(v.Divergence)
			if !strings.Contains(txt, fmt.Sprintf("seq %d", tc.first)) || !strings.Contains(txt, "pid 1, pid 2: seq") ||
				!strings.Contains(txt, "pid 3: seq") || !strings.Contains(txt, "9 channels") {
				t.Fatalf("report:\n%s", txt)
			}
		})
	}
}

// TestLedgerEpochRecovery: after a divergence, every rank switches at one
// call to a policy they share (one epoch id): check compares from there and
// agrees again; a rank that alone reloads opens an epoch the others lack and
// the divergence from its first call is named.
func TestLedgerEpochRecovery(t *testing.T) {
	fixed := false
	dec := func(s uint64) int32 {
		if s >= 2000 && s%7 == 0 && !fixed {
			return 3
		}
		return 5
	}
	a, b, c := newSim("pid 1", steady), newSim("pid 2", steady), newSim("pid 3", func(s uint64) int32 {
		if s >= 3000 {
			return 5
		}
		return dec(s)
	})
	rs := []*simRank{a, b, c}
	for _, r := range rs {
		r.run(2900, 50)
	}
	if v := checkSims(t, rs); v.Agree || v.Divergence.Seq != 2002 {
		t.Fatalf("before the recovery: %+v", v)
	}
	for _, r := range rs {
		r.ledger.MarkEpoch("tx-1", 3000, nil)
		r.run(4000, 50)
	}
	v := checkSims(t, rs)
	if !v.Agree || v.Epoch.ID != "tx-1" || v.From != 3000 || v.Through < 3900 {
		t.Fatalf("after every rank switched at 3000: %+v", v)
	}
	// One rank alone switches to other decisions at 4100.
	b.ledger.MarkEpoch("alone", 4100, nil)
	b.decide = func(s uint64) int32 {
		if s >= 4100 {
			return 6
		}
		return 5
	}
	for _, r := range rs {
		r.run(4500, 64)
	}
	v = checkSims(t, rs)
	if v.Agree || v.Epoch.ID != "tx-1" || v.Divergence == nil || v.Divergence.Seq != 4100 {
		t.Fatalf("after a lone switch at 4100: %+v", v)
	}
}

// TestLedgerGapAndLostRecords: a rank whose drain missed calls (its ring
// wrapped) compares only from after the gap; a difference whose decisions
// are no longer kept is named as a window, not as a wrong call.
func TestLedgerGapAndLostRecords(t *testing.T) {
	a, b := newSim("pid 1", steady), newSim("pid 2", steady)
	a.run(1000, 100)
	b.run(700, 600) // the first drain at 599: calls before 599-256 were missed
	b.run(1000, 100)
	v := checkSims(t, []*simRank{a, b})
	if !v.Agree || v.From < 300 || v.From > 600 {
		t.Fatalf("with a gap: %+v", v)
	}
	// A divergence at 100 far behind: more than MaxRecords calls later its
	// decisions are gone, its block sums are not.
	c, d := newSim("pid 1", steady), newSim("pid 2", func(s uint64) int32 {
		if s == 100 {
			return 4
		}
		return 5
	})
	n := uint64(MaxRecords + 1000)
	c.run(n, 200)
	d.run(n, 200)
	v = checkSims(t, []*simRank{c, d})
	if v.Agree || v.Divergence == nil || v.Divergence.Exact || v.Divergence.Seq != 64 || v.Divergence.SeqTo != 128 {
		t.Fatalf("divergence older than the records kept: %+v", v.Divergence)
	}
	if txt := FormatFirstDivergence(v.Divergence); !strings.Contains(txt, "between 64 and 127") {
		t.Fatal(txt)
	}
}

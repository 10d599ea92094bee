package control

import (
	"fmt"
	"sort"
	"strings"
)

// The decision ledger: what `ncclbpf check` compares. The plugin keeps a
// communicator's last 256 decisions in shared memory (decisions.h); a
// background goroutine of the control plane (never an NCCL thread) drains
// them into a Ledger, which keeps, per communicator:
//
//   - the epochs: call sequences from which every rank runs a new policy or
//     new agreed values (an at-seq reload, an agreed update, a two-phase
//     commit), each with an id that is the same on every rank that took
//     part ("load SHA" for the first policy);
//   - block sums: the decision digest is a sum of one term per decision
//     (decisions_fold.h), so the sum of the terms of calls [a, b) says
//     whether two ranks decided alike on every call there. Blocks end at
//     every multiple of BlockCalls and at every epoch start; MaxBlocks of
//     them are kept (older ones are dropped: ValidFrom moves up);
//   - the last MaxRecords decisions themselves, each with its term.
//
// Check compares ranks from the latest epoch they all share, window by
// window (the multiples of BlockCalls), and names the first call of the
// first differing window that differs, with each rank's decision there;
// later differences do not hide it. A window whose decisions are no longer
// kept is named as a range.

// Ledger bounds.
const (
	BlockCalls = 64
	MaxBlocks  = 1 << 16
	MaxRecords = 1 << 14
)

// Epoch is a call sequence from which a communicator runs a new policy or
// new agreed values. Ranks that switched together have the same ID and Start.
type Epoch struct {
	ID    string `json:"id"`
	Start uint64 `json:"start"`
}

// Block is the sum of the decision terms of calls [From, next block's From).
type Block struct {
	From uint64 `json:"f"`
	Sum  uint64 `json:"s"`
}

// LedgerView is one communicator's ledger as a rank reports it.
type LedgerView struct {
	CommID uint64 `json:"comm_id"`
	NRanks uint32 `json:"n_ranks"`
	// Through is the last call drained (-1: none); calls after it are not
	// compared yet.
	Through int64 `json:"through"`
	// ValidFrom is the first call from which the blocks are complete (the
	// ledger missed calls before it, or dropped their blocks).
	ValidFrom uint64  `json:"valid_from"`
	Epochs    []Epoch `json:"epochs"`
	Blocks    []Block `json:"blocks,omitempty"`
	// Records are the decisions asked for (LedgerQuery range), with
	// Term set; KeptFrom is the first call the ledger still keeps decisions of.
	Records  []Decision `json:"records,omitempty"`
	KeptFrom uint64     `json:"kept_from"`
	// EnvDigest is the digest of every NCCL parameter the env plugin
	// served the process (0: NCCL did not use it as its env plugin).
	// Ranks given different environments are a known cause of hangs.
	EnvDigest uint64 `json:"env_digest,omitempty"`
}

// commLedger is a Ledger's state of one communicator.
type commLedger struct {
	id        uint64
	nranks    uint32
	through   int64  // last call drained
	lastD     uint64 // cumulative digest after the last recorded call drained
	validFrom uint64
	epochs    []Epoch
	blocks    []Block
	recs      []Decision // ring of MaxRecords, by insertion
	recStart  int
	known     bool // lastD is the digest after every recorded call through `through`
}

// Ledger accumulates the decision records of a process's communicators.
// It is not safe for concurrent use (the plugin guards it with a mutex).
type Ledger struct {
	comms   map[uint64]*commLedger
	initial string
	// pending epochs (not yet reached by every communicator): they apply
	// to every communicator at At (or CommAt's own call).
	marks []epochMark
}

type epochMark struct {
	id     string
	at     uint64
	commAt map[uint64]uint64
}

// NewLedger starts a ledger whose first epoch (call 0) is named initial.
func NewLedger(initial string) *Ledger {
	return &Ledger{comms: map[uint64]*commLedger{}, initial: initial}
}

// MarkEpoch records that every communicator starts epoch id at call at
// (commAt: communicators with their own call). It must come before the
// ledger has drained that call.
func (l *Ledger) MarkEpoch(id string, at uint64, commAt map[uint64]uint64) {
	l.marks = append(l.marks, epochMark{id: id, at: at, commAt: commAt})
}

// UnmarkEpoch withdraws a marked epoch that did not happen (an aborted or
// cancelled switch); communicators that already drained its start keep it.
func (l *Ledger) UnmarkEpoch(id string) {
	out := l.marks[:0]
	for _, m := range l.marks {
		if m.id != id {
			out = append(out, m)
		}
	}
	l.marks = out
}

func (m epochMark) startOf(comm uint64) uint64 {
	if s, ok := m.commAt[comm]; ok {
		return s
	}
	return m.at
}

// Ingest drains snapshots of the communicators' decision records (as
// OpDecisions returns them); communicators no longer listed are dropped.
func (l *Ledger) Ingest(recs []CommDecisions) {
	live := map[uint64]bool{}
	for _, r := range recs {
		live[r.CommID] = true
		c := l.comms[r.CommID]
		if c == nil {
			c = &commLedger{id: r.CommID, nranks: r.NRanks, through: -1, epochs: []Epoch{{ID: l.initial, Start: 0}}}
			l.comms[r.CommID] = c
		}
		l.ingest(c, r)
	}
	for id := range l.comms {
		if !live[id] {
			delete(l.comms, id)
		}
	}
}

func (l *Ledger) ingest(c *commLedger, r CommDecisions) {
	last, ok := settled(r)
	if !ok || int64(last) <= c.through {
		return
	}
	from := uint64(c.through + 1)
	if c.through < 0 && r.KeptFrom == 0 {
		c.known, c.lastD = true, 0 // complete from call 0: the digest started at 0
	}
	if r.KeptFrom > from {
		// Calls from..KeptFrom-1 were never seen: the digest before the
		// next record is unknown.
		c.known = false
		from = r.KeptFrom
	}
	for _, d := range r.Recent {
		if d.Seq < from || d.Seq > last {
			continue
		}
		l.ensureBlock(c, d.Seq)
		if !c.known {
			// Its term is unknown; the blocks restart after it.
			c.lastD, c.known = d.Digest, true
			c.validFrom, c.blocks = d.Seq+1, nil
			continue
		}
		d.Term = d.Digest - c.lastD
		c.lastD = d.Digest
		c.addTerm(d.Seq, d.Term)
		c.keep(d)
	}
	l.ensureBlock(c, last)
	c.through = int64(last)
	if !c.known {
		c.validFrom, c.blocks = last+1, nil
	}
}

// ensureBlock opens the epochs and blocks that start at or before seq.
func (l *Ledger) ensureBlock(c *commLedger, seq uint64) {
	for _, m := range l.marks {
		s := m.startOf(c.id)
		if s <= seq && int64(s) > c.through && !c.hasEpoch(m.id, s) {
			c.epochs = append(c.epochs, Epoch{ID: m.id, Start: s})
		}
	}
	if seq < c.validFrom {
		return
	}
	if len(c.blocks) == 0 {
		c.blocks = append(c.blocks, Block{From: c.validFrom})
	}
	for {
		cur := c.blocks[len(c.blocks)-1].From
		nb := (cur/BlockCalls + 1) * BlockCalls
		for _, e := range c.epochs {
			if e.Start > cur && e.Start < nb {
				nb = e.Start
			}
		}
		if nb > seq {
			return
		}
		c.blocks = append(c.blocks, Block{From: nb})
		if len(c.blocks) > MaxBlocks {
			drop := len(c.blocks) - MaxBlocks
			c.blocks = append(c.blocks[:0], c.blocks[drop:]...)
			c.validFrom = c.blocks[0].From
		}
	}
}

func (c *commLedger) hasEpoch(id string, start uint64) bool {
	for _, e := range c.epochs {
		if e.ID == id && e.Start == start {
			return true
		}
	}
	return false
}

func (c *commLedger) addTerm(seq, term uint64) {
	if seq < c.validFrom || len(c.blocks) == 0 {
		return
	}
	c.blocks[len(c.blocks)-1].Sum += term
}

func (c *commLedger) keep(d Decision) {
	if len(c.recs) < MaxRecords {
		c.recs = append(c.recs, d)
		return
	}
	c.recs[c.recStart] = d
	c.recStart = (c.recStart + 1) % MaxRecords
}

func (c *commLedger) records() []Decision {
	return append(append([]Decision(nil), c.recs[c.recStart:]...), c.recs[:c.recStart]...)
}

// View reports the ledger of communicator id (all when id is nil) with the
// decisions of calls [from, to) (none when to <= from).
func (l *Ledger) View(id *uint64, from, to uint64) []LedgerView {
	ids := make([]uint64, 0, len(l.comms))
	for k := range l.comms {
		if id == nil || *id == k {
			ids = append(ids, k)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]LedgerView, 0, len(ids))
	for _, k := range ids {
		c := l.comms[k]
		v := LedgerView{CommID: c.id, NRanks: c.nranks, Through: c.through, ValidFrom: c.validFrom,
			Epochs: append([]Epoch(nil), c.epochs...), Blocks: append([]Block(nil), c.blocks...)}
		recs := c.records()
		v.KeptFrom = c.validFrom
		if len(c.recs) == MaxRecords && len(recs) > 0 {
			v.KeptFrom = max(v.KeptFrom, recs[0].Seq)
		}
		if v.Through >= 0 {
			v.KeptFrom = min(v.KeptFrom, uint64(v.Through)+1)
		}
		for _, d := range recs {
			if d.Seq >= from && d.Seq < to {
				v.Records = append(v.Records, d)
			}
		}
		out = append(out, v)
	}
	return out
}

// Member is one rank's ledger of a communicator, for CheckLedgers.
type Member struct {
	Name string // how the operator knows the rank: "pid 4242", "node-a pid 4242"
	LedgerView
}

// RecordsFunc fetches the decisions of calls [from, to) of every member
// (the same order); CheckLedgers calls it for the window it must look into.
type RecordsFunc func(from, to uint64) ([][]Decision, error)

// LedgerVerdict is the outcome of CheckLedgers.
type LedgerVerdict struct {
	// Agree: every member decided alike on every call compared.
	Agree bool `json:"agree"`
	// Epoch is the epoch compared from (the latest every member shares).
	Epoch Epoch `json:"epoch"`
	// From and Through are the calls compared (Through < From: none).
	From    uint64 `json:"from"`
	Through uint64 `json:"through"`
	// Divergence is the first divergent call, when not Agree.
	Divergence *FirstDivergence `json:"divergence,omitempty"`
	// Note says why nothing could be compared, when From > Through.
	Note string `json:"note,omitempty"`
}

// FirstDivergence names the first call on which members decided
// differently.
type FirstDivergence struct {
	// Seq is the call; Exact false means the decisions of the window
	// [Seq, SeqTo) are no longer kept by every member and only the window
	// is known.
	Seq   uint64 `json:"seq"`
	SeqTo uint64 `json:"seq_to,omitempty"`
	Exact bool   `json:"exact"`
	// Groups are the members by what they decided at Seq (the first group
	// holds the first member).
	Groups []DecisionGroup `json:"groups,omitempty"`
}

// DecisionGroup is members that decided alike at a call: Decision nil means
// left to NCCL; Other: the same decision with another digest term (another
// collective size).
type DecisionGroup struct {
	Members  []string  `json:"members"`
	Decision *Decision `json:"decision,omitempty"`
}

// commonEpoch is the latest epoch every member has (by id and start).
func commonEpoch(ms []Member) Epoch {
	best := Epoch{ID: "", Start: 0}
	for _, e := range ms[0].Epochs {
		all := true
		for _, m := range ms[1:] {
			found := false
			for _, f := range m.Epochs {
				if f == e {
					found = true
					break
				}
			}
			if !found {
				all = false
				break
			}
		}
		if all && e.Start >= best.Start {
			best = e
		}
	}
	return best
}

// sumOver returns the sum of m's block terms over [a, b); ok false if the
// blocks do not cover it exactly (it does not start or end on a boundary
// of m's blocks, or starts before ValidFrom).
func sumOver(m *Member, a, b uint64) (uint64, bool) {
	if a < m.ValidFrom || len(m.Blocks) == 0 {
		return 0, false
	}
	i := sort.Search(len(m.Blocks), func(i int) bool { return m.Blocks[i].From >= a })
	if i == len(m.Blocks) || m.Blocks[i].From != a {
		return 0, false
	}
	var s uint64
	for ; i < len(m.Blocks) && m.Blocks[i].From < b; i++ {
		s += m.Blocks[i].Sum
	}
	if i < len(m.Blocks) && m.Blocks[i].From != b {
		return 0, false
	}
	return s, true
}

// CheckLedgers compares the ledgers of one communicator's members from
// their latest common epoch through the last call every member drained.
func CheckLedgers(ms []Member, fetch RecordsFunc) (LedgerVerdict, error) {
	if len(ms) < 2 {
		return LedgerVerdict{}, fmt.Errorf("check: want at least two ranks of the communicator, have %d", len(ms))
	}
	ep := commonEpoch(ms)
	v := LedgerVerdict{Epoch: ep, From: ep.Start}
	through := ms[0].Through
	for _, m := range ms[1:] {
		through = min(through, m.Through)
	}
	for _, m := range ms {
		v.From = max(v.From, m.ValidFrom)
	}
	if through < 0 || uint64(through) < v.From {
		v.Through = v.From - 1
		if v.From == 0 {
			v.Through = 0
		}
		v.Note = "no call drained by every rank since the common epoch yet"
		if v.From > ep.Start {
			v.Note = fmt.Sprintf("the ranks no longer keep every call from epoch %s (call %d) on: compared from call %d", ep.ID, ep.Start, v.From)
		}
		return v, nil
	}
	v.Through = uint64(through)
	end := v.Through + 1
	// Windows: from From to the next multiple of BlockCalls, then whole
	// multiples, then the tail up to end (compared call by call: the
	// blocks of the members end at their own Through).
	a := v.From
	for a < end {
		b := (a/BlockCalls + 1) * BlockCalls
		tail := b > end
		if tail {
			b = end
		}
		differ := tail
		if !tail {
			s0, ok := sumOver(&ms[0], a, b)
			differ = !ok
			for i := 1; i < len(ms) && !differ; i++ {
				s, ok := sumOver(&ms[i], a, b)
				differ = !ok || s != s0
			}
		}
		if differ {
			dv, err := firstIn(ms, fetch, a, b)
			if err != nil {
				return v, err
			}
			if dv != nil {
				v.Divergence = dv
				return v, nil
			}
		}
		a = b
	}
	v.Agree = true
	return v, nil
}

// firstIn compares the members call by call over [a, b) and returns the
// first divergent call (nil: none).
func firstIn(ms []Member, fetch RecordsFunc, a, b uint64) (*FirstDivergence, error) {
	recs, err := fetch(a, b)
	if err != nil {
		return nil, err
	}
	if len(recs) != len(ms) {
		return nil, fmt.Errorf("check: records of %d ranks for %d", len(recs), len(ms))
	}
	idx := make([]map[uint64]Decision, len(ms))
	kept := true
	for i, rs := range recs {
		idx[i] = map[uint64]Decision{}
		for _, d := range rs {
			idx[i][d.Seq] = d
		}
		if ms[i].KeptFrom > a {
			kept = false
		}
	}
	for s := a; s < b; s++ {
		groups := []DecisionGroup{}
		for i := range ms {
			d, ok := idx[i][s]
			var dp *Decision
			if ok {
				dc := d
				dp = &dc
			}
			placed := false
			for g := range groups {
				o := groups[g].Decision
				if (o == nil && dp == nil) || (o != nil && dp != nil && o.Same(*dp) && o.Term == dp.Term) {
					groups[g].Members = append(groups[g].Members, ms[i].Name)
					placed = true
					break
				}
			}
			if !placed {
				groups = append(groups, DecisionGroup{Members: []string{ms[i].Name}, Decision: dp})
			}
		}
		if len(groups) > 1 {
			if !kept {
				return &FirstDivergence{Seq: a, SeqTo: b}, nil
			}
			return &FirstDivergence{Seq: s, Exact: true, Groups: groups}, nil
		}
	}
	if !kept {
		// The sums differ but the decisions are gone: only the window is known.
		return &FirstDivergence{Seq: a, SeqTo: b}, nil
	}
	return nil, nil
}

// FormatFirstDivergence describes dv for people, one line per group.
func FormatFirstDivergence(dv *FirstDivergence) string {
	if !dv.Exact {
		return fmt.Sprintf("first divergent call between %d and %d (the decisions of those calls are no longer kept)", dv.Seq, dv.SeqTo-1)
	}
	s := fmt.Sprintf("first divergent call: seq %d", dv.Seq)
	for _, g := range dv.Groups {
		who := strings.Join(g.Members, ", ")
		if g.Decision == nil {
			s += fmt.Sprintf("\n  %s: left to NCCL (no decision recorded)", who)
		} else {
			s += fmt.Sprintf("\n  %s: %s (term %016x)", who, g.Decision, g.Decision.Term)
		}
	}
	return s
}

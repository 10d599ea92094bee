package verifier

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
)

// Rank uniformity. Every rank of a communicator must take the same tuner
// decision for the same collective, or NCCL hangs. For hooks that Decide,
// the verifier runs an information-flow analysis alongside the safety
// analysis, in the same passes and states: every register and stack value
// carries a label, uniform (src 0) or local (src names where the local
// data came from: a clock, a random number, a [local] context field, a map
// that programs write, or a branch on such a value).
//
// Explicit flows: an operation's result is local when an operand is; a
// load is local when its pointer is, or when it reads a [local] context
// field, a Local map, or local stack bytes. Implicit flows: a conditional
// jump on a local value whose outcome is not decided pushes a control
// entry that lasts until the jump's immediate post-dominator (where its
// two sides meet again) or, failing one, until the function returns;
// every register written and every value stored while an entry is active
// is local. Sinks: a store into a writable context field (the decision's
// outputs) and r0 at the program's exit; a local value or an active
// control entry there is E033 rank-divergent.
//
// Labels take part in pruning (a state is covered only by one at least as
// local) and in joins (local wins). A constant is not taken for uniform:
// a value set to 1 on one side of a local branch and to 2 on the other is
// a constant on each path and local on both.

// taintSrc is where a local value came from, for messages (rendered only
// when a message needs it).
type taintSrc struct {
	pc    int
	kind  srcKind
	arg   int    // srcCtx: field offset; srcHelper: helper id; srcMap: map index
	cause uint32 // srcBranch: the source of its condition
}

type srcKind uint8

const (
	srcCtx srcKind = iota
	srcHelper
	srcMap
	srcBranch
)

// ctlEntry is an active implicit flow: the path runs under a branch on a
// local value, in frame frame, until pc end (-1: until the frame returns).
type ctlEntry struct {
	frame int
	end   int
	src   uint32
}

// dropImplicitFlows disables the implicit-flow rule. Only the mutation
// test sets it, to prove that the corpus catches a verifier without it.
var dropImplicitFlows = false

// uniformity reports whether the analysis runs for this program.
func (ck *checker) uniformity() bool { return ck.uniform }

// source returns the id of a local source, the same id for the same
// source (loops do not grow the table).
func (ck *checker) source(pc int, kind srcKind, arg int, cause uint32) uint32 {
	key := taintSrc{pc, kind, arg, cause}
	if id, ok := ck.srcIDs[key]; ok {
		return id
	}
	ck.srcs = append(ck.srcs, key)
	id := uint32(len(ck.srcs)) // ids start at 1
	ck.srcIDs[key] = id
	return id
}

// sourceText renders a local source: "bpf_ktime_get_ns() at
// policy.c:30 (pc 4)", or for an implicit flow "a branch at policy.c:33
// (pc 9) on bpf_ktime_get_ns() at policy.c:30 (pc 4)".
func (ck *checker) sourceText(id uint32) string {
	if id == 0 || int(id) > len(ck.srcs) {
		return "rank-local data"
	}
	s := ck.srcs[id-1]
	var what string
	switch s.kind {
	case srcBranch:
		return fmt.Sprintf("a branch at %s on %s", ck.where(s.pc), ck.sourceText(s.cause))
	case srcCtx:
		what = fmt.Sprintf("context field at offset %d [local]", s.arg)
		if f, elem := ck.hook.Context.FieldAt(s.arg, 1); f != nil {
			what = "context field " + f.Name + " [local]"
			if f.Array > 1 {
				what = fmt.Sprintf("context field %s[%d] [local]", f.Name, elem)
			}
		}
	case srcHelper:
		what = fmt.Sprintf("helper %d", s.arg)
		if p := ck.proto(helpers.ID(s.arg)); p != nil {
			what = p.Name + "()"
		}
	case srcMap:
		what = "map " + ck.mapName(s.arg) + ", which a program of the bundle writes,"
		if !ck.local(s.arg) {
			what = "per-CPU map " + ck.mapName(s.arg) + " (each thread reads its own copy of the value)"
		}
	}
	return fmt.Sprintf("%s at %s", what, ck.where(s.pc))
}

// either returns a if it is local, else b.
func either(a, b uint32) uint32 {
	if a != 0 {
		return a
	}
	return b
}

// ctlSrc returns the source of the innermost active control entry, or 0.
func (st *state) ctlSrc() uint32 {
	if n := len(st.ctl); n > 0 {
		return st.ctl[n-1].src
	}
	return 0
}

// endControl drops the control entries of the top frame that end at pc.
func (st *state) endControl(pc int) {
	top := len(st.frames) - 1
	for i := len(st.ctl) - 1; i >= 0; i-- {
		if e := st.ctl[i]; e.frame == top && e.end == pc {
			st.ctl = append(st.ctl[:i:i], st.ctl[i+1:]...)
		}
	}
}

// endFrameControl drops the control entries of the top frame (it returns).
func (st *state) endFrameControl() {
	top := len(st.frames) - 1
	k := 0
	for _, e := range st.ctl {
		if e.frame != top {
			st.ctl[k] = e
			k++
		}
	}
	st.ctl = st.ctl[:k]
}

// branchControl is called when a conditional jump at pc runs on operands
// with sources a and b: a local condition puts both sides under control.
// fork is nil when the path's facts decide the jump: it is still under
// control, because those facts came from earlier branches on the same
// local data (x > 5 tested again after a join is decided on each path,
// one way on one path and the other way on the other), and the outcome
// that this path sees may differ on another rank.
func (ck *checker) branchControl(st, fork *state, pc int, a, b uint32) {
	if !ck.uniformity() || dropImplicitFlows {
		return
	}
	cause := either(a, b)
	if cause == 0 || len(st.ctl) > 0 {
		// an active entry covers this jump's: its end post-dominates
		// this jump (the path reached here without passing it), so
		// every path from here meets this jump's end no later than its
		// own, and a callee returns before its caller's entry ends.
		// Keeping one entry keeps the state small when every jump of a
		// long chain tests the same local value.
		return
	}
	if ck.ipdom == nil {
		ck.ipdom = ck.postDominators()
	}
	e := ctlEntry{frame: len(st.frames) - 1, end: ck.ipdom[pc], src: ck.source(pc, srcBranch, 0, cause)}
	for _, s := range []*state{st, fork} {
		if s != nil && !s.hasControl(e) {
			s.ctl = append(s.ctl, e)
		}
	}
}

func (st *state) hasControl(e ctlEntry) bool {
	for _, x := range st.ctl {
		if x.frame == e.frame && x.end == e.end {
			return true
		}
	}
	return false
}

// controlLeq reports whether every control entry of cur is one of old's.
func controlLeq(old, cur *state) bool {
	for _, e := range cur.ctl {
		if !old.hasControl(e) {
			return false
		}
	}
	return true
}

// joinControl returns the union of the control entries of a and b.
func joinControl(a, b *state) []ctlEntry {
	if len(a.ctl) == 0 && len(b.ctl) == 0 {
		return nil
	}
	r := append([]ctlEntry(nil), a.ctl...)
	for _, e := range b.ctl {
		if !a.hasControl(e) {
			r = append(r, e)
		}
	}
	return r
}

// taintDefs marks the registers the instruction at pc wrote as local
// while a control entry is active.
func (ck *checker) taintDefs(st *state, pc int) {
	src := st.ctlSrc()
	if src == 0 {
		return
	}
	ins := ck.insns[pc]
	if isPseudoCall(ins) || ins.Op == asm.OpExit {
		return // the callee's frame (entries reach it); a return writes r0 of the caller from the callee's r0
	}
	_, def := ck.usesDefs(ins)
	f := st.top()
	for r := asm.R0; r < asm.R10; r++ {
		if def&(1<<r) != 0 && f.regs[r].k != kUninit && f.regs[r].src == 0 {
			f.regs[r].src = src
		}
	}
}

// stackSrc returns the source of local data among the bytes [lo, hi) of a
// frame's stack (offsets from fp-512), or 0.
func (s *stack) stackSrc(lo, hi int) uint32 {
	for i := lo / 8; i <= (hi-1)/8; i++ {
		if s.spilled(i) {
			if v := s.slot(i); v.src != 0 {
				return v.src
			}
		} else if s.local&(1<<i) != 0 {
			return s.localSrc
		}
	}
	return 0
}

// markLocal records that plain bytes of slots lo/8..(hi-1)/8 may hold
// local data.
func (s *stack) markLocal(lo, hi int, src uint32) {
	for i := lo / 8; i <= (hi-1)/8; i++ {
		s.local |= 1 << i
	}
	s.localSrc = src
}

// checkSink refuses a decision output that depends on local data.
func (ck *checker) checkSink(st *state, pc int, what string, v value) *Error {
	if !ck.uniformity() {
		return nil
	}
	src := either(v.src, st.ctlSrc())
	if src == 0 {
		return nil
	}
	return ck.errorf(RankDivergent, pc, "%s depends on %s, which may differ between ranks; ranks that decide differently hang the collective (decide from [uniform] inputs, .rodata and maps no program writes, or adapt through an agreed map)", what, ck.sourceText(src))
}

// postDominators computes, for every pc of every subprogram, the pc of its
// immediate post-dominator (the first pc that every path from it to the
// function's exit runs), or -1 when that is the exit itself. It is where
// the two sides of a conditional jump meet again.
func (ck *checker) postDominators() []int {
	n := len(ck.insns)
	ipdom := make([]int, n)
	for i := range ipdom {
		ipdom[i] = -1
	}
	for _, sp := range ck.subs {
		ck.subPostDominators(sp.start, sp.end, ipdom)
	}
	return ipdom
}

// subPostDominators fills ipdom for the pcs [start, end) of one function,
// with the Cooper-Harvey-Kennedy iteration on the reversed control-flow
// graph (the exit, node n = end-start, is its root). Nodes are pcs minus
// start; everything lives in flat slices.
func (ck *checker) subPostDominators(start, end int, ipdom []int) {
	n := end - start
	exit := n
	// successors in the CFG (at most two; -1: none)
	s1 := make([]int32, n)
	s2 := make([]int32, n)
	npred := make([]int32, n+2)
	for i := 0; i < n; i++ {
		s1[i], s2[i] = -1, -1
		pc := start + i
		if ck.prog.IsSecond(pc) {
			continue
		}
		ins := ck.insns[pc]
		switch {
		case ins.Op == asm.OpExit:
			s1[i] = int32(exit)
		default:
			if t, ok := ck.jumpTarget(pc); ok {
				s1[i] = int32(t - start)
				if isGoto(ins) {
					break
				}
			}
			if nx := ck.next(pc); nx < end {
				if s1[i] < 0 {
					s1[i] = int32(nx - start)
				} else {
					s2[i] = int32(nx - start)
				}
			}
		}
		for _, s := range [2]int32{s1[i], s2[i]} {
			if s >= 0 {
				npred[s+1]++
			}
		}
	}
	// predecessors (of the CFG: successors of the reversed graph), CSR
	for i := 1; i < len(npred); i++ {
		npred[i] += npred[i-1]
	}
	preds := make([]int32, npred[n+1])
	fill := append([]int32(nil), npred[:n+1]...)
	for i := 0; i < n; i++ {
		for _, s := range [2]int32{s1[i], s2[i]} {
			if s >= 0 {
				preds[fill[s]] = int32(i)
				fill[s]++
			}
		}
	}
	// postorder of the reversed graph from the exit
	num := make([]int32, n+1)
	for i := range num {
		num[i] = -1
	}
	order := make([]int32, 0, n+1)
	type item struct{ node, next int32 }
	stack := []item{{int32(exit), npred[exit]}}
	seen := make([]bool, n+1)
	seen[exit] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < npred[top.node+1] {
			p := preds[top.next]
			top.next++
			if !seen[p] {
				seen[p] = true
				stack = append(stack, item{p, npred[p]})
			}
			continue
		}
		num[top.node] = int32(len(order))
		order = append(order, top.node)
		stack = stack[:len(stack)-1]
	}
	idom := make([]int32, n+1)
	for i := range idom {
		idom[i] = -1
	}
	idom[exit] = int32(exit)
	intersect := func(a, b int32) int32 {
		for a != b {
			for num[a] < num[b] {
				a = idom[a]
			}
			for num[b] < num[a] {
				b = idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for k := len(order) - 2; k >= 0; k-- { // reverse postorder, root (last) skipped
			node := order[k]
			newIdom := int32(-1)
			for _, s := range [2]int32{s1[node], s2[node]} { // reversed-graph predecessors
				if s < 0 || idom[s] < 0 {
					continue
				}
				if newIdom < 0 {
					newIdom = s
				} else {
					newIdom = intersect(s, newIdom)
				}
			}
			if newIdom >= 0 && idom[node] != newIdom {
				idom[node] = newIdom
				changed = true
			}
		}
	}
	for i := 0; i < n; i++ {
		if d := idom[i]; d >= 0 && d != int32(exit) {
			ipdom[start+i] = start + int(d)
		}
	}
}

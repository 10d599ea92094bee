package verifier

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/structure"
	"github.com/ncclbpf/ncclbpf/loader"
)

// maxStoredPerPC bounds the states kept at one prune point.
const maxStoredPerPC = 64

// checker holds everything one Verify call needs; nothing is shared
// between calls.
type checker struct {
	cfg   *Config
	hook  *hook.Hook
	maps  []*loader.MapSpec
	insns []asm.Instruction
	info  *Info

	maxDepth, maxStack int
	// budget is the work this pass may do, work what it has done: one
	// unit per instruction visited, per state comparison and per join
	// attempt, each of bounded cost, so that the time a verification
	// takes is bounded by the budget (BENCHMARKS.md, "Verification").
	budget, work int
	joinAfter    int // join states past this many per pc; 0: never
	joined       int // joins performed
	merged       bool
	ran          []bool // merged: prune points run at least once

	prog     *structure.Program // the validated structure (structure.go)
	prune    []bool             // pc is a jump target or a branch's fall-through
	loopHead []bool             // pc is the target of a backward jump
	loopEnd  []int              // loop head pc -> the last pc that jumps back to it
	subOf    []int              // pc -> index in subs
	subs     []subprog
	live     []regSet // registers live at entry of pc

	seen   [][]*visited
	visits int
	stored int
	// free holds states that no path, queue or stored state refers to any
	// more (joined away in the merged pass), for fork to reuse.
	free     []*state
	nextID   uint32
	ids      idMap
	warnings []*Error
	warned   map[int]bool
	// refPC maps a ringbuf reference id to the pc of the reserve that
	// made it, for messages.
	refPC map[uint32]int

	// rank uniformity (flow.go, uniform.go): immediate post-dominators
	// and the sources of local data named in messages
	ipdom     []int
	ipdomDone []bool // per function: its ipdom entries are computed
	srcs      []taintSrc
	srcIDs    map[taintSrc]uint32
	// facts are gathered for the uniformity analysis (flow.go)
	facts *flowFacts
	// written marks the maps the program may write
	written []bool

	stackTotal int
	// ctxUse holds the context accesses proven
	ctxUse []CtxAccess
}

// visited is a state stored at a prune point. While its exploration is
// in progress it is an ancestor of the path being explored.
type visited struct {
	st   *state
	done bool
}

func newChecker(c *Config, insns []asm.Instruction, info *Info) *checker {
	return &checker{
		cfg:      c,
		hook:     c.Hook,
		maps:     c.Maps,
		insns:    insns,
		info:     info,
		maxDepth: orDefault(c.MaxCallDepth, DefaultMaxCallDepth),
		maxStack: orDefault(c.MaxStack, DefaultMaxStack),
		budget:   orDefault(c.Complexity, DefaultComplexity),
		refPC:    map[uint32]int{},
	}
}

func (ck *checker) proto(id helpers.ID) *helpers.Proto {
	if p := ck.cfg.Protos[id]; p != nil {
		return p
	}
	return helpers.Lookup(id)
}

func (ck *checker) newID() uint32 {
	ck.nextID++
	return ck.nextID
}

// prepare runs the checks that do not depend on the pass: the length,
// the structure (structure.go) and register liveness. The passes share
// what it computes (forPass).
func (ck *checker) prepare() *Error {
	n := len(ck.insns)
	if n == 0 {
		return ck.errorf(MissingExit, 0, "the program is empty")
	}
	if max := orDefault(ck.cfg.MaxInsns, DefaultMaxInsns); n > max {
		return ck.errorf(TooManyInstructions, max, "the program has %d instructions; at most %d are allowed", n, max)
	}
	ck.prune = make([]bool, n)
	ck.loopHead = make([]bool, n)
	ck.loopEnd = make([]int, n)
	if e := ck.structure(); e != nil {
		return e
	}
	ck.liveness()
	return nil
}

// forPass returns a checker for one pass of the analysis that shares the
// prepared structure with ck (read-only) and owns everything else.
func (ck *checker) forPass(pass int) *checker {
	p := newChecker(ck.cfg, ck.insns, ck.info)
	p.prog, p.prune, p.loopHead, p.loopEnd, p.subOf, p.live =
		ck.prog, ck.prune, ck.loopHead, ck.loopEnd, ck.subOf, ck.live
	p.subs = make([]subprog, len(ck.subs))
	copy(p.subs, ck.subs) // the walk records each function's stack depth
	p.merged = pass == 0
	if pass == 1 {
		p.joinAfter = joinAfter
	}
	return p
}

// explore walks every path of a prepared checker and returns the first
// error.
func (ck *checker) explore() *Error {
	n := len(ck.insns)
	ck.written = make([]bool, len(ck.maps))
	if ck.hook.Decides && !ck.cfg.DisableRankUniformity {
		ck.facts = newFlowFacts(n)
		ck.srcIDs = map[taintSrc]uint32{}
	}
	ck.seen = make([][]*visited, n)
	walk := ck.walk
	if ck.merged {
		walk = func(st *state, _ int) *Error { return ck.walkMerged(st) }
	}
	if e := walk(ck.entryState(), 0); e != nil {
		return e
	}
	return ck.checkStackBudget()
}

// visit counts one abstract execution of the instruction at pc against
// the budget, records st for Info and executes the instruction (step).
func (ck *checker) visit(st *state, pc int) (next int, fork *state, forkPC int, e *Error) {
	ck.visits++
	if !ck.spend(1) {
		return 0, nil, 0, ck.budgetError(pc)
	}
	if ck.info != nil && ck.info.States != nil && len(ck.info.States[pc]) < 4 {
		ck.info.States[pc] = append(ck.info.States[pc], st.describe(ck))
	}
	if ck.facts == nil {
		return ck.step(st, pc)
	}
	ctx := st.top().ctx
	ck.facts.record(ck, st, pc)
	next, fork, forkPC, e = ck.step(st, pc)
	if fork != nil {
		ck.facts.recordEdges(ck, ctx, pc, next, forkPC)
	} else {
		ck.facts.recordEdges(ck, ctx, pc, next)
	}
	return next, fork, forkPC, e
}

func (ck *checker) entryState() *state {
	st := &state{frames: make([]frame, 1, 4)}
	f := &st.frames[0]
	f.callsite = -1
	f.regs[asm.R1] = value{k: kCtx, s: constScalar(0)}
	f.regs[asm.R10] = value{k: kStack, s: constScalar(0)}
	return st
}

// walk explores every path from st at pc, depth first. It forks at
// conditional jumps whose both outcomes are possible and stops a path when
// its state is included in one already proven safe at a prune point.
func (ck *checker) walk(st *state, pc int) *Error {
	var mine []*visited
	defer func() {
		for _, v := range mine {
			v.done = true
		}
	}()
	for {
		if ck.prune[pc] {
			pruned, e := ck.checkpoint(st, pc, &mine)
			if e != nil || pruned {
				return e
			}
		}
		next, fork, forkPC, e := ck.visit(st, pc)
		if e != nil {
			return e
		}
		if fork != nil {
			ck.spend(ck.stateCost(fork)) // checked at the next instruction
			// explore one side recursively and continue with the other;
			// a backward jump (a loop) is continued, so that iterations
			// do not deepen the recursion
			if forkPC <= pc && next > pc {
				fork, st = st, fork
				forkPC, next = next, forkPC
			}
			if e := ck.walk(fork, forkPC); e != nil {
				return e
			}
		}
		if next < 0 {
			return nil
		}
		pc = next
	}
}

// checkpoint compares st with the states stored at pc: included in a
// finished one, the path is pruned; equal to one still being explored (an
// ancestor), the loop makes no progress. Otherwise st is stored.
func (ck *checker) checkpoint(st *state, pc int, mine *[]*visited) (bool, *Error) {
	list := ck.seen[pc]
	var cl *state
	for _, v := range list {
		if !ck.spend(ck.stateCost(st)) {
			return false, ck.budgetError(pc)
		}
		// stored states have their dead registers cleared, so st need
		// not be cleaned to be compared with them
		if !leq(v.st, st, &ck.ids) {
			continue
		}
		if v.done {
			return true, nil
		}
		if cl == nil {
			cl = ck.clean(st, pc)
		}
		if leq(cl, v.st, &ck.ids) {
			return false, ck.errorf(InfiniteLoop, ck.loopJump(pc), "the loop at pc %d comes back to its head in the same state (%s): it never terminates", pc, st.describe(ck))
		}
	}
	replace := -1
	if ck.joinAfter > 0 && len(list) >= ck.joinAfter {
		// too many different states here: continue with one that covers
		// st and the latest finished state, which it then replaces
		for i := len(list) - 1; i >= 0; i-- {
			if !list[i].done {
				continue
			}
			if cl == nil {
				cl = ck.clean(st, pc)
			}
			ck.spend(ck.stateCost(st))
			if js := ck.join(list[i].st, cl, true); js != nil {
				ck.joined++
				*st = *js
				cl = ck.clean(st, pc)
				replace = i
			}
			break
		}
	}
	slot := len(list)
	if replace >= 0 {
		slot = replace
	}
	if slot >= maxStoredPerPC {
		// replace a finished state; when all are in progress keep the
		// list as it is (pruning is only an optimization)
		slot = -1
		for i, old := range list {
			if old.done {
				slot = i
				break
			}
		}
		if slot < 0 {
			return false, nil
		}
	}
	if cl == nil {
		cl = ck.clean(st, pc)
	}
	v := &visited{st: cl}
	if slot == len(list) {
		ck.seen[pc] = append(list, v)
	} else {
		list[slot] = v
	}
	ck.stored++
	*mine = append(*mine, v)
	return false, nil
}

// clean copies st for storage, forgetting registers that are dead at pc
// (in the callee) and at the return sites (in the callers), and scalar
// copy ids that link nothing.
func (ck *checker) clean(st *state, pc int) *state {
	n := st.clone()
	// every link is counted: a stored state that forgot a link would be
	// more general than the state that was explored, and pruning against
	// it would be unsound
	var idsBuf [16]uint32
	var cntBuf [16]int
	ids, cnt := idsBuf[:0], cntBuf[:0]
	for fi := range n.frames {
		live := ck.live[pc]
		if fi+1 < len(n.frames) {
			live = ck.live[n.frames[fi+1].callsite+1] &^ (argRegs | 1)
		}
		live |= 1 << asm.R10
		for r := range n.frames[fi].regs {
			if live&(1<<r) == 0 {
				n.frames[fi].regs[r] = value{}
			}
		}
	}
	linked := func(v value) bool { return v.k == kScalar && v.id != 0 }
	n.each(func(v value) {
		if !linked(v) {
			return
		}
		for i := range ids {
			if ids[i] == v.id {
				cnt[i]++
				return
			}
		}
		ids, cnt = append(ids, v.id), append(cnt, 1)
	})
	single := func(v value) bool {
		if !linked(v) {
			return false
		}
		for i := range ids {
			if ids[i] == v.id {
				return cnt[i] < 2
			}
		}
		return false // (not reached: each and update visit the same values)
	}
	n.update(single, func(v *value) { v.id, v.rel, v.delta = 0, relCopy, 0 })
	return n
}

// loopJump returns a pc that jumps back to head, for messages.
func (ck *checker) loopJump(head int) int {
	for pc := len(ck.insns) - 1; pc >= head; pc-- {
		if t, ok := ck.jumpTarget(pc); ok && t == head && !ck.prog.IsSecond(pc) {
			return pc
		}
	}
	return head
}

// budgetError reports an exhausted budget at the back edge of the loop
// with the most iterations in progress, or at pc when no loop is involved.
func (ck *checker) budgetError(pc int) *Error {
	best, bestN := -1, 1
	for p := range ck.seen {
		n := 0
		for _, v := range ck.seen[p] {
			if !v.done || ck.merged {
				n++
			}
		}
		if n > bestN {
			best, bestN = p, n
		}
	}
	if best < 0 {
		return ck.errorf(Complexity, pc, "verification ran out of its budget (%s) without finishing; simplify the branches leading here", ck.budgetText())
	}
	return ck.errorf(Complexity, ck.loopJump(best), "verification ran out of its budget (%s) without finishing: the loop at pc %d ran at least %d iterations and its bound is still not proven (compare the counter with a constant, or bound the value it is compared with)", ck.budgetText(), best, bestN)
}

// spend charges n units of work to the pass and reports whether it is
// still within its budget.
func (ck *checker) spend(n int) bool {
	ck.work += n
	return ck.work <= ck.budget
}

// stateCost is the work of comparing, joining or copying st, in steps:
// each frame holds eleven registers and up to 64 stack slots, a few
// instructions' worth of work.
func (ck *checker) stateCost(st *state) int { return 4 * len(st.frames) }

// budgetText describes the budget for messages.
func (ck *checker) budgetText() string {
	if ck.cfg.Budget != nil {
		return itoa(ck.cfg.Budget.total) + " steps for all programs of the bundle and every pass"
	}
	return itoa(orDefault(ck.cfg.Complexity, DefaultComplexity)) + " steps of instructions visited and states compared, over every pass"
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// checkStackBudget sums the stack used along each chain of calls.
func (ck *checker) checkStackBudget() *Error {
	var chain func(s int) (int, int)
	// chain returns the deepest total from s and the call pc responsible
	chain = func(s int) (int, int) {
		best, at := 0, -1
		for _, pc := range ck.subs[s].calls {
			t := ck.subOf[pc+1+int(ck.insns[pc].Imm)]
			d, _ := chain(t)
			if d > best {
				best, at = d, pc
			}
		}
		return ck.subs[s].depth + best, at
	}
	total, at := chain(0)
	ck.stackTotal = total
	if total > ck.maxStack {
		return ck.errorf(StackBudget, max(at, 0), "the frames of one call chain use %d bytes of stack in total; at most %d are allowed", total, ck.maxStack)
	}
	return nil
}

// fork returns a clone of st for the other side of a branch, reusing a
// recycled state when there is one.
func (ck *checker) fork(st *state) *state {
	if n := len(ck.free); n > 0 {
		r := ck.free[n-1]
		ck.free = ck.free[:n-1]
		return st.cloneInto(r)
	}
	return st.clone()
}

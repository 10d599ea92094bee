package verifier

import (
	"container/heap"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
)

// Rank uniformity is a property of two runs: two ranks that call a
// deciding program with the same [uniform] inputs and the same uniform
// state, but different [local] inputs, helper results, thread slots and
// local map contents, must decide alike. A path-by-path analysis cannot
// prove it: a value written on one side of a branch on local data stays
// uniform on the path that does not write it, and each path passes alone
// while the two runs part ways. So the safety passes only gather facts
// about the reachable states (which edges of each conditional jump some
// run takes, where each pointer may point), and one analysis of the
// whole control-flow graph decides uniformity, once (checkFlow):
//
//   - Every register, every stack byte of every frame of the call chain,
//     and every map carries a label, uniform or local. The analysis runs
//     over the graph of (call context, pc) nodes to a fixed point; where
//     paths meet, a label is local if it is local on any incoming path.
//   - Explicit flows: an instruction's result is local when an operand,
//     the pointer it loads through or the memory it reads is local. [local]
//     context fields, maps that any program of the bundle writes (an LRU
//     lookup writes: it changes the eviction order), per-CPU maps, ringbuf
//     records, and the results of helpers that read process state (clocks,
//     random numbers, the thread slot, bpf_printk's rate limit, the return
//     codes of updates and deletes, ringbuf reservations) are local.
//   - Implicit flows (the region rule): a conditional jump on a local value
//     that some run takes each way opens a region that lasts until the
//     jump's immediate post-dominator, or until its function returns when
//     it has none. Everything written inside the region on any path, a
//     register, stack bytes (the caller's too, through pointers passed
//     down), a function's return value, is local, and stays local after
//     the region wherever the two runs meet again.
//   - Sinks: a store into a writable context field (a decision output) and
//     r0 at the program's exit (whether the decision is applied). A local
//     label there, or an open region (the store happens on one run and not
//     on the other), is E033 rank-divergent.
//
// Path-sensitive passes refine the facts (fewer edges, tighter offsets);
// they never accept uniformity themselves.

// dropRegionRule disables the region rule. Only the mutation tests set it,
// to prove that the tests catch a verifier without it.
var dropRegionRule = false

// flowFacts are what the safety pass that accepted the program saw, per
// (call context, pc): a sound over-approximation of every run.
type flowFacts struct {
	ctxs  []flowCtx
	child map[[2]int32]int32 // (parent context, call pc) -> context
	nodes [][]nodeFact       // [context][pc]
	ops   []opFacts
}

// flowCtx is a call context: the chain of call sites from the entry
// program (context 0).
type flowCtx struct {
	parent   int32
	callsite int32
	depth    int
}

const (
	factReached uint8 = 1 << iota
	factJump          // a conditional jump was taken
	factFall          // a conditional jump fell through
)

type nodeFact struct {
	flags uint8
	ops   int32 // 1 + index into flowFacts.ops, 0: none
}

// opFacts are the operands of a memory instruction ([0]: the pointer) or
// of a helper call (r1-r5).
type opFacts [5]ptrFact

// ptrFact joins the abstract values a register held at one node.
type ptrFact struct {
	kinds  uint16 // bit k: some run held a value of kind k
	frame  int8   // kStack: frame index; -1 none yet, -2 several
	mapIdx int32  // kMapHandle, kMapValue*: map index; -1 none yet, -2 several
	lo, hi int64  // offsets (pointers) or signed range (scalars)
	umax   uint64 // scalars: largest unsigned value
}

func newFlowFacts(n int) *flowFacts {
	return &flowFacts{ctxs: []flowCtx{{parent: -1, callsite: -1}}, child: map[[2]int32]int32{}, nodes: [][]nodeFact{make([]nodeFact, n)}}
}

// childCtx returns the context of a call at pc from context parent.
func (ff *flowFacts) childCtx(parent int32, pc int) int32 {
	key := [2]int32{parent, int32(pc)}
	if c, ok := ff.child[key]; ok {
		return c
	}
	c := int32(len(ff.ctxs))
	ff.ctxs = append(ff.ctxs, flowCtx{parent: parent, callsite: int32(pc), depth: ff.ctxs[parent].depth + 1})
	ff.nodes = append(ff.nodes, make([]nodeFact, len(ff.nodes[0])))
	ff.child[key] = c
	return c
}

func (p *ptrFact) add(v value) {
	if v.k == kUninit {
		return
	}
	first := p.kinds == 0
	p.kinds |= 1 << v.k
	lo, hi := v.s.smin, v.s.smax
	if first {
		p.lo, p.hi, p.frame, p.mapIdx = lo, hi, -1, -1
	} else {
		p.lo, p.hi = min(p.lo, lo), max(p.hi, hi)
	}
	p.umax = max(p.umax, v.s.umax)
	if v.k == kStack {
		switch {
		case p.frame == -1:
			p.frame = int8(v.frame)
		case p.frame != int8(v.frame):
			p.frame = -2
		}
	}
	if v.k == kMapHandle || v.k == kMapValue || v.k == kMapValueOrNull {
		switch {
		case p.mapIdx == -1:
			p.mapIdx = v.idx
		case p.mapIdx != v.idx:
			p.mapIdx = -2
		}
	}
}

func (p *ptrFact) has(k kind) bool { return p.kinds&(1<<k) != 0 }

// record notes the state st about to run the instruction at pc.
func (ff *flowFacts) record(ck *checker, st *state, pc int) {
	f := st.top()
	n := &ff.nodes[f.ctx][pc]
	n.flags |= factReached
	ins := ck.insns[pc]
	var regs [5]asm.Register
	var nregs int
	switch c := ins.Op.Class(); {
	case c == asm.ClassLDX:
		regs[0], nregs = ins.Src, 1
	case c == asm.ClassST || c == asm.ClassSTX:
		regs[0], nregs = ins.Dst, 1
	case ins.Op == asm.OpCall && ins.Src != asm.PseudoCall:
		regs, nregs = [5]asm.Register{asm.R1, asm.R2, asm.R3, asm.R4, asm.R5}, 5
	default:
		return
	}
	if n.ops == 0 {
		ff.ops = append(ff.ops, opFacts{})
		n.ops = int32(len(ff.ops))
	}
	o := &ff.ops[n.ops-1]
	for i, r := range regs[:nregs] {
		o[i].add(f.regs[r])
	}
}

// retSite reports a node that a subprogram returns to.
func (ff *flowFacts) retSite(ck *checker, nd flowNode) bool {
	pc := nd.pc - 1
	return pc >= 0 && isPseudoCall(ck.insns[pc])
}

// recordEdges notes which way a conditional jump at pc went.
func (ff *flowFacts) recordEdges(ck *checker, ctx int32, pc int, targets ...int) {
	ins := ck.insns[pc]
	if !ins.Op.Class().IsJump() || ins.Op.JumpOp() == asm.JumpA || ins.Op.JumpOp() == asm.JumpCall || ins.Op.JumpOp() == asm.JumpExit {
		return
	}
	t, _ := ck.jumpTarget(pc)
	n := &ff.nodes[ctx][pc]
	for _, x := range targets {
		if x == t {
			n.flags |= factJump
		}
		if x == pc+1 {
			n.flags |= factFall
		}
	}
}

// flowState holds the labels at one node: 0 uniform, else the source of
// local data (uniform.go). Frames are those of the node's call context.
type flowState struct {
	frames []flowFrame
	ctl    []flowCtl
}

// flowFrame holds the labels of one frame.
type flowFrame struct {
	regs   [asm.NumRegisters]uint32
	stk    [stackSlots]uint8 // bit b of slot i: byte 8i+b is local
	stkSrc uint32            // the source of a local byte
}

// flowCtl is an open region: a branch on local data in frame frame, until
// pc end (-1: until the frame returns).
type flowCtl struct {
	frame int
	end   int
	src   uint32
}

func (s *flowState) clone() *flowState {
	return s.cloneWith(0)
}

// cloneWith copies s with room for extra more frames.
func (s *flowState) cloneWith(extra int) *flowState {
	n := &flowState{frames: make([]flowFrame, len(s.frames), len(s.frames)+extra)}
	copy(n.frames, s.frames)
	if len(s.ctl) > 0 {
		n.ctl = append([]flowCtl(nil), s.ctl...)
	}
	return n
}

// joinFrom makes s cover o (same frames) and reports whether s changed.
func (s *flowState) joinFrom(o *flowState) bool {
	changed := false
	for fi := range s.frames {
		f, g := &s.frames[fi], &o.frames[fi]
		for r := range f.regs {
			if f.regs[r] == 0 && g.regs[r] != 0 {
				f.regs[r] = g.regs[r]
				changed = true
			}
		}
		for i := range f.stk {
			if b := f.stk[i] | g.stk[i]; b != f.stk[i] {
				f.stk[i] = b
				changed = true
			}
		}
		if f.stkSrc == 0 && g.stkSrc != 0 {
			f.stkSrc = g.stkSrc
			changed = true
		}
	}
	for _, c := range o.ctl {
		if !s.hasCtl(c) {
			s.ctl = append(s.ctl, c)
			changed = true
		}
	}
	return changed
}

func (s *flowState) hasCtl(c flowCtl) bool {
	for _, x := range s.ctl {
		if x.frame == c.frame && x.end == c.end {
			return true
		}
	}
	return false
}

// ctlSrc returns the source of an open region, or 0.
func (s *flowState) ctlSrc() uint32 {
	if len(s.ctl) > 0 {
		return s.ctl[0].src
	}
	return 0
}

// stackLocal returns the source of local data among bytes [lo, hi) of
// frame fi (offsets from fp-512), or 0.
func (s *flowState) stackLocal(fi, lo, hi int) uint32 {
	lo, hi = max(lo, 0), min(hi, asm.StackSize)
	f := &s.frames[fi]
	for b := lo; b < hi; b++ {
		if f.stk[b/8]&(1<<(b%8)) != 0 {
			return f.stkSrc
		}
	}
	return 0
}

// setStack labels bytes [lo, hi) of frame fi: all of them (strong) or
// only adding local (weak).
func (s *flowState) setStack(fi, lo, hi int, src uint32, strong bool) {
	lo, hi = max(lo, 0), min(hi, asm.StackSize)
	f := &s.frames[fi]
	for b := lo; b < hi; b++ {
		switch {
		case src != 0:
			f.stk[b/8] |= 1 << (b % 8)
		case strong:
			f.stk[b/8] &^= 1 << (b % 8)
		}
	}
	if src != 0 && f.stkSrc == 0 {
		f.stkSrc = src
	}
}

// flowNode is a node of the analysis: a pc in a call context.
type flowNode struct {
	ctx int32
	pc  int
}

// checkFlow decides rank uniformity on the facts of the accepted pass.
func (ck *checker) checkFlow() *Error {
	ff := ck.facts
	if ff == nil {
		return nil
	}
	if ck.srcIDs == nil {
		ck.srcIDs = map[taintSrc]uint32{}
	}
	n := len(ck.insns)
	in := make([][]*flowState, len(ff.ctxs))
	for c := range in {
		in[c] = make([]*flowState, n)
	}
	queued := make([][]bool, len(ff.ctxs))
	for c := range queued {
		queued[c] = make([]bool, n)
	}
	// nodes run in pc order (clang lays code out forwards), so that a
	// node usually runs once, after all its forward predecessors
	work := &flowQueue{}
	// a node that only its previous instruction reaches (not a jump
	// target, a fall-through after a branch, nor a return site) keeps no
	// state of its own: the walk goes on into it
	var cont flowNode
	var contSt *flowState
	// push joins st into the state of node to; owned: st may become it
	push := func(to flowNode, st *flowState, owned bool) {
		if owned && !ck.prune[to.pc] && !ck.facts.retSite(ck, to) {
			cont, contSt = to, st
			return
		}
		cur := in[to.ctx][to.pc]
		switch {
		case cur == nil && owned:
			in[to.ctx][to.pc] = st
		case cur == nil:
			in[to.ctx][to.pc] = st.clone()
		case !cur.joinFrom(st):
			return
		}
		if !queued[to.ctx][to.pc] {
			queued[to.ctx][to.pc] = true
			heap.Push(work, to)
		}
	}
	in[0][0] = &flowState{frames: make([]flowFrame, 1)}
	heap.Push(work, flowNode{0, 0})
	for work.Len() > 0 {
		nd := heap.Pop(work).(flowNode)
		queued[nd.ctx][nd.pc] = false
		if !ck.spend(1) {
			return ck.budgetError(nd.pc)
		}
		st := in[nd.ctx][nd.pc].cloneWith(1)
		for st != nil {
			contSt = nil
			if e := ck.flowStep(st, nd, push); e != nil {
				return e
			}
			nd, st = cont, contSt
			if st != nil && !ck.spend(1) {
				return ck.budgetError(nd.pc)
			}
		}
	}
	return nil
}

// flowQueue orders nodes by pc, then context.
type flowQueue []flowNode

func (q flowQueue) Len() int { return len(q) }
func (q flowQueue) Less(i, j int) bool {
	return q[i].pc < q[j].pc || q[i].pc == q[j].pc && q[i].ctx < q[j].ctx
}
func (q flowQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *flowQueue) Push(x any)   { *q = append(*q, x.(flowNode)) }
func (q *flowQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// flowStep applies the instruction of node nd to st (which it owns) and
// pushes the result to the node's successors.
func (ck *checker) flowStep(st *flowState, nd flowNode, push func(flowNode, *flowState, bool)) *Error {
	ff := ck.facts
	pc := nd.pc
	fact := ff.nodes[nd.ctx][pc]
	if fact.flags&factReached == 0 {
		return nil // no run gets here
	}
	top := len(st.frames) - 1
	// regions of this frame that end here
	k := 0
	for _, c := range st.ctl {
		if c.frame != top || c.end != pc {
			st.ctl[k] = c
			k++
		}
	}
	st.ctl = st.ctl[:k]
	ctl := st.ctlSrc()
	regs := &st.frames[top].regs
	ins := ck.insns[pc]
	var ops *opFacts
	if fact.ops > 0 {
		ops = &ff.ops[fact.ops-1]
	}
	next := flowNode{nd.ctx, ck.next(pc)}
	switch c := ins.Op.Class(); c {
	case asm.ClassALU, asm.ClassALU64:
		var src uint32
		if ins.Op.Source() == asm.SourceX && ins.Op.ALUOp() != asm.ALUEnd {
			src = regs[ins.Src]
		}
		switch {
		case ins.Op.ALUOp() == asm.ALUMov:
			regs[ins.Dst] = either(src, ctl)
		default:
			regs[ins.Dst] = either(either(regs[ins.Dst], src), ctl)
		}
	case asm.ClassLD:
		regs[ins.Dst] = ctl
	case asm.ClassLDX:
		if ops == nil {
			return nil
		}
		regs[ins.Dst] = either(either(regs[ins.Src], ck.flowMem(st, pc, &ops[0], int(ins.Off), ins.Op.Size().Bytes())), ctl)
	case asm.ClassST, asm.ClassSTX:
		if ops == nil {
			return nil
		}
		if e := ck.flowStore(st, pc, ins, &ops[0], ctl); e != nil {
			return e
		}
	default:
		switch ins.Op.JumpOp() {
		case asm.JumpA:
			t, _ := ck.jumpTarget(pc)
			push(flowNode{nd.ctx, t}, st, true)
			return nil
		case asm.JumpCall:
			if ins.Src == asm.PseudoCall {
				child, ok := ff.child[[2]int32{nd.ctx, int32(pc)}]
				if !ok {
					return nil // the call never ran
				}
				st.frames = append(st.frames, flowFrame{})
				callee := &st.frames[top+1]
				copy(callee.regs[asm.R1:asm.R6], st.frames[top].regs[asm.R1:asm.R6])
				push(flowNode{child, pc + 1 + int(ins.Imm)}, st, true)
				return nil
			}
			ck.flowHelper(st, pc, ins, ops, ctl)
		case asm.JumpExit:
			return ck.flowExit(st, nd, push)
		default:
			ck.flowBranch(st, pc, ins, fact, ctl)
			t, _ := ck.jumpTarget(pc)
			both := fact.flags&factFall != 0 && t != pc+1
			if fact.flags&factJump != 0 {
				push(flowNode{nd.ctx, t}, st, !both)
			}
			if both {
				push(flowNode{nd.ctx, pc + 1}, st, true)
			}
			return nil
		}
	}
	push(next, st, true)
	return nil
}

// flowBranch opens a region at a conditional jump on local data that some
// run takes each way.
func (ck *checker) flowBranch(st *flowState, pc int, ins asm.Instruction, fact nodeFact, ctl uint32) {
	top := len(st.frames) - 1
	cond := st.frames[top].regs[ins.Dst]
	if ins.Op.Source() == asm.SourceX {
		cond = either(cond, st.frames[top].regs[ins.Src])
	}
	if cond == 0 || dropRegionRule || fact.flags&(factJump|factFall) != factJump|factFall {
		return
	}
	if t, _ := ck.jumpTarget(pc); t == pc+1 {
		return // both ways lead to the same place
	}
	c := flowCtl{frame: top, end: ck.ipdomOf(pc), src: ck.source(pc, srcBranch, 0, cond)}
	if !st.hasCtl(c) {
		st.ctl = append(st.ctl, c)
	}
}

// flowExit returns from a function (r0 is local when a region of the
// function is still open: the runs may return from different places) or
// checks the program's return value.
func (ck *checker) flowExit(st *flowState, nd flowNode, push func(flowNode, *flowState, bool)) *Error {
	top := len(st.frames) - 1
	r0 := either(st.frames[top].regs[asm.R0], st.ctlSrc())
	if top == 0 {
		if r0 != 0 {
			return ck.sinkError(nd.pc, "the return value (whether the decision is applied)", r0)
		}
		return nil
	}
	k := 0
	for _, c := range st.ctl {
		if c.frame != top {
			st.ctl[k] = c
			k++
		}
	}
	st.ctl = st.ctl[:k]
	st.frames = st.frames[:top]
	caller := &st.frames[top-1].regs
	caller[asm.R0] = r0
	for r := asm.R1; r <= asm.R5; r++ {
		caller[r] = 0
	}
	fc := ck.facts.ctxs[nd.ctx]
	push(flowNode{fc.parent, int(fc.callsite) + 1}, st, true)
	return nil
}

// flowMem returns the label of size bytes read at ptr+off.
func (ck *checker) flowMem(st *flowState, pc int, p *ptrFact, off, size int) uint32 {
	var src uint32
	if p.has(kStack) {
		src = either(src, ck.flowStackRead(st, p, off, size))
	}
	if p.has(kCtx) {
		for o := p.lo + int64(off); o <= p.hi+int64(off) && src == 0; o++ {
			if f, _ := ck.hook.Context.FieldAt(int(o), 1); f != nil && f.Scope == hook.RankLocal {
				src = ck.source(pc, srcCtx, int(o), 0)
			}
		}
	}
	if p.has(kMapValue) || p.has(kMapValueOrNull) {
		src = either(src, ck.flowMapSrc(pc, p.mapIdx))
	}
	if p.has(kAlloc) || p.has(kAllocOrNull) {
		src = either(src, ck.source(pc, srcHelper, int(helpers.RingbufReserve), 0))
	}
	return src
}

// flowStackRead returns the label of the stack bytes a read may hit.
func (ck *checker) flowStackRead(st *flowState, p *ptrFact, off, size int) uint32 {
	lo := int(p.lo) + off + asm.StackSize
	hi := int(p.hi) + off + asm.StackSize + size
	if p.frame >= 0 {
		return st.stackLocal(int(p.frame), lo, hi)
	}
	for fi := range st.frames {
		if s := st.stackLocal(fi, lo, hi); s != 0 {
			return s
		}
	}
	return 0
}

// flowMapSrc is the label of data read from map mi (-2: any map).
func (ck *checker) flowMapSrc(pc int, mi int32) uint32 {
	if mi == -2 {
		for i := range ck.maps {
			if s := ck.flowMapSrc(pc, int32(i)); s != 0 {
				return s
			}
		}
		return 0
	}
	// the bundle's writes (Config.local), this program's own (its calls
	// of several communicators interleave in a rank-local order), per-CPU
	if ck.local(int(mi)) || ck.written[mi] || ck.perCPU(int(mi)) {
		return ck.source(pc, srcMap, int(mi), 0)
	}
	return 0
}

// flowStore labels what a store or an atomic update writes, and checks
// decision outputs.
func (ck *checker) flowStore(st *flowState, pc int, ins asm.Instruction, p *ptrFact, ctl uint32) *Error {
	top := len(st.frames) - 1
	regs := &st.frames[top].regs
	size := ins.Op.Size().Bytes()
	val := either(regs[ins.Dst], ctl) // the place, and the path
	if ins.Op.Class() == asm.ClassSTX {
		val = either(regs[ins.Src], val)
	}
	atomic := ins.Op.Mode() == asm.ModeAtomic
	if atomic && ins.Imm == asm.AtomicCmpXchg {
		val = either(val, regs[asm.R0])
	}
	if p.has(kCtx) && ck.hook.Decides {
		name := "a decision output"
		if f, elem := ck.hook.Context.FieldAt(int(p.lo)+int(ins.Off), size); f != nil {
			name = f.Name
			if f.Array > 1 {
				name = f.Name + "[" + itoa(elem) + "]"
			}
		}
		if val != 0 {
			return ck.sinkError(pc, name, val)
		}
	}
	var old uint32
	if atomic {
		old = either(ck.flowMem(st, pc, p, int(ins.Off), size), either(regs[ins.Dst], ctl))
	}
	if p.has(kStack) {
		lo := int(p.lo) + int(ins.Off) + asm.StackSize
		hi := int(p.hi) + int(ins.Off) + asm.StackSize + size
		strong := p.frame >= 0 && p.lo == p.hi && p.kinds == 1<<kStack && !atomic
		frames := []int{int(p.frame)}
		if p.frame < 0 {
			frames = frames[:0]
			for fi := range st.frames {
				frames = append(frames, fi)
			}
		}
		for _, fi := range frames {
			src := val
			if atomic {
				src = either(val, st.stackLocal(fi, lo, hi))
			}
			st.setStack(fi, lo, hi, src, strong)
		}
	}
	if atomic {
		switch {
		case ins.Imm == asm.AtomicCmpXchg:
			regs[asm.R0] = old
		case ins.Imm&asm.AtomicFetch != 0:
			regs[ins.Src] = old
		}
	}
	return nil
}

// flowHelper labels a helper's result.
func (ck *checker) flowHelper(st *flowState, pc int, ins asm.Instruction, ops *opFacts, ctl uint32) {
	top := len(st.frames) - 1
	regs := &st.frames[top].regs
	id := helpers.ID(ins.Imm)
	var r0 uint32
	if id == helpers.MapLookupElem && ops != nil {
		// whether the lookup finds an entry, and where, depends on the
		// key, the map and the map's contents
		r0 = either(regs[asm.R1], regs[asm.R2])
		if m := ops[0].mapIdx; m != -1 {
			r0 = either(r0, ck.flowMapSrc(pc, m))
			if ks := ck.flowKeySize(m); ks > 0 {
				r0 = either(r0, ck.flowMem(st, pc, &ops[1], 0, ks))
			}
		}
	} else {
		// every other helper's result reads process state
		r0 = ck.source(pc, srcHelper, int(id), 0)
	}
	regs[asm.R0] = either(r0, ctl)
	for r := asm.R1; r <= asm.R5; r++ {
		regs[r] = 0
	}
}

// flowKeySize returns the key size of map mi (-2: the largest).
func (ck *checker) flowKeySize(mi int32) int {
	if mi >= 0 && int(mi) < len(ck.maps) {
		return int(ck.maps[mi].KeySize)
	}
	n := 0
	for _, m := range ck.maps {
		n = max(n, int(m.KeySize))
	}
	return n
}

// sinkError is E033 for a decision output or return value labelled src.
func (ck *checker) sinkError(pc int, what string, src uint32) *Error {
	return ck.errorf(RankDivergent, pc, "%s depends on %s, which may differ between ranks; ranks that decide differently hang the collective (decide from [uniform] inputs, .rodata and maps no program writes, or adapt through an agreed map)", what, ck.sourceText(src))
}

package verifier

import (
	"container/heap"
	"math/bits"

	"github.com/ncclbpf/ncclbpf/asm"
)

// The merged exploration (the first, fast pass): states wait in a queue
// ordered by pc, and all states waiting at one pc are joined before it is
// executed. Since clang lays code out forwards, every forward predecessor
// of a pc runs before it, so straight-line regions with many branches are
// explored once instead of once per path. Loops still unroll: an
// iteration's state comes back to the loop head by a backward jump after
// the head's earlier states have run, and is not joined with them; the
// states leaving the loop in every iteration are joined after it. A state
// that comes back along a backward jump and is included in one seen at
// the loop head before may loop forever: it is rejected (the exact pass
// then decides).

// pending is a state waiting at a pc; back is set when it arrived through
// a backward jump.
type pending struct {
	st   *state
	back bool
}

type pcHeap []int

func (h pcHeap) Len() int           { return len(h) }
func (h pcHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h pcHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pcHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *pcHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type mergeQueue struct {
	ck    *checker
	at    map[int][]pending
	order pcHeap
}

// maxPendingPerPC bounds the states kept apart at one pc because joining
// them would lose a context or stack pointer; past it they are joined.
const maxPendingPerPC = 16

// push queues st at pc, joining it with a waiting state of the same shape.
// States whose context or stack pointers sit at different offsets (two
// iterations of a loop that walks the context, say) are kept apart: their
// join would hold a pointer of variable offset, which cannot be used.
func (q *mergeQueue) push(pc int, st *state, back bool) {
	list, queued := q.at[pc]
	force := len(list) >= maxPendingPerPC
	for i := range list {
		q.ck.spend(q.ck.stateCost(st)) // checked at the next instruction
		if !force && !samePointerOffsets(list[i].st, st) {
			continue
		}
		// a waiting state belongs to the queue alone (forks are clones,
		// checkpoints store clean copies), so it can become the join
		if q.ck.joinInto(list[i].st, st) {
			list[i].back = list[i].back || back
			q.ck.free = append(q.ck.free, st) // joined away: reusable
			return
		}
		if js := q.ck.join(list[i].st, st, false); js != nil {
			q.ck.free = append(q.ck.free, list[i].st, st)
			list[i] = pending{js, list[i].back || back}
			return
		}
	}
	q.at[pc] = append(list, pending{st, back})
	if !queued {
		heap.Push(&q.order, pc)
	}
}

// pop removes and returns the pc to run next: the lowest pc with waiting
// states, except that states which came back to a loop head wait until
// no state is waiting inside the loop (between the head and its last back
// jump). Without this, the next iteration would overtake the rest of the
// current one and the two would be joined where they meet, mixing the
// iterations' counters and pointers.
func (q *mergeQueue) pop() int {
	pc := q.order[0]
	for q.ck.loopHead[pc] && q.hasBack(pc) {
		inner := -1
		for _, p := range q.order {
			if p > pc && p <= q.ck.loopEnd[pc] && (inner < 0 || p < inner) {
				inner = p
			}
		}
		if inner < 0 {
			break
		}
		pc = inner
	}
	for i, p := range q.order {
		if p == pc {
			heap.Remove(&q.order, i)
			break
		}
	}
	return pc
}

// hasBack reports a state waiting at pc that came around a loop.
func (q *mergeQueue) hasBack(pc int) bool {
	for _, p := range q.at[pc] {
		if p.back {
			return true
		}
	}
	return false
}

// samePointerOffsets reports whether a and b hold their context and stack
// pointers (in registers and spilled) at the same constant offsets.
func samePointerOffsets(a, b *state) bool {
	if len(a.frames) != len(b.frames) {
		return true // not joinable anyway
	}
	differ := func(x, y value) bool {
		return x.k == y.k && (x.k == kCtx || x.k == kStack) && x.frame == y.frame && x.s != y.s
	}
	for fi := range a.frames {
		fa, fb := &a.frames[fi], &b.frames[fi]
		for r := range fa.regs {
			if differ(fa.regs[r], fb.regs[r]) {
				return false
			}
		}
		for both := fa.stk.spill & fb.stk.spill; both != 0; both &= both - 1 {
			i := bits.TrailingZeros64(both)
			if differ(fa.stk.slot(i), fb.stk.slot(i)) {
				return false
			}
		}
	}
	return true
}

func (ck *checker) walkMerged(entry *state) *Error {
	q := &mergeQueue{ck: ck, at: map[int][]pending{}}
	ck.ran = make([]bool, len(ck.insns))
	q.push(0, entry, false)
	for q.order.Len() > 0 {
		pc := q.pop()
		list := q.at[pc]
		delete(q.at, pc)
		for _, p := range list {
			if e := ck.runMerged(q, p, pc); e != nil {
				return e
			}
		}
	}
	return nil
}

// runMerged executes from pc until the path reaches a prune point (where
// its state is queued), forks, or ends.
func (ck *checker) runMerged(q *mergeQueue, p pending, pc int) *Error {
	st := p.st
	first := true
	for {
		if ck.prune[pc] && !first {
			q.push(pc, st, false)
			return nil
		}
		if ck.prune[pc] {
			pruned, e := ck.mergedCheckpoint(st, pc, p.back)
			if e != nil || pruned {
				return e
			}
			ck.ran[pc] = true
		}
		first = false
		next, fork, forkPC, e := ck.visit(st, pc)
		if e != nil {
			return e
		}
		if fork != nil {
			ck.spend(ck.stateCost(fork)) // checked at the next instruction
			q.push(forkPC, fork, ck.isBackJump(pc, forkPC))
		}
		if next < 0 {
			return nil
		}
		if next <= pc && ck.isBackJump(pc, next) {
			q.push(next, st, true)
			return nil
		}
		pc = next
	}
}

// isBackJump reports a jump from pc to an earlier pc of the same function
// (a loop), as opposed to a return from a subprogram.
func (ck *checker) isBackJump(from, to int) bool {
	if to > from {
		return false
	}
	ins := ck.insns[from]
	return ins.Op.Class().IsJump() && ins.Op != asm.OpExit && ck.subOf[from] == ck.subOf[to]
}

// mergedCheckpoint prunes st when a state seen at pc includes it; when
// st came around a loop, that means the loop may never end.
func (ck *checker) mergedCheckpoint(st *state, pc int, back bool) (bool, *Error) {
	list := ck.seen[pc]
	for _, v := range list {
		if !ck.spend(ck.stateCost(st)) {
			return false, ck.budgetError(pc)
		}
		if !leq(v.st, st, &ck.ids) {
			continue
		}
		if back {
			return false, ck.errorf(InfiniteLoop, ck.loopJump(pc), "the loop at pc %d comes back to its head in a state it has already been in (%s): it may never terminate", pc, st.describe(ck))
		}
		return true, nil
	}
	// in pc order, forward arrivals at a pc are joined before it runs:
	// states are kept only where paths come back (loop heads) or arrive
	// late (a pc already run)
	if len(list) < maxStoredPerPC && (ck.loopHead[pc] || ck.ran[pc]) {
		ck.seen[pc] = append(list, &visited{st: ck.clean(st, pc), done: true})
		ck.stored++
	}
	return false, nil
}

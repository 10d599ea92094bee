package verifier

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
)

// Where local data comes from, for E033's messages, and where the two
// sides of a branch meet again (immediate post-dominators). The analysis
// that uses them is in flow.go.

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
		switch {
		case ck.perCPU(s.arg):
			what = "per-CPU map " + ck.mapName(s.arg) + " (each thread reads its own copy of the value)"
		case lru(ck.maps[s.arg].Type):
			what = "LRU map " + ck.mapName(s.arg) + ", which a program of the bundle looks up or writes (a lookup reorders it, and so changes what an update evicts),"
		default:
			what = "map " + ck.mapName(s.arg) + ", which a program of the bundle writes,"
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

// ipdomOf returns the immediate post-dominator of pc (the first pc that
// every path from it to its function's exit runs), or -1 when that is the
// exit itself: where the two sides of a conditional jump meet again. Each
// function's are computed the first time one of its pcs is asked for.
func (ck *checker) ipdomOf(pc int) int {
	if ck.ipdom == nil {
		ck.ipdom = make([]int, len(ck.insns))
		ck.ipdomDone = make([]bool, len(ck.subs))
	}
	if s := ck.subOf[pc]; !ck.ipdomDone[s] {
		ck.ipdomDone[s] = true
		ck.subPostDominators(ck.subs[s].start, ck.subs[s].end, ck.ipdom)
	}
	return ck.ipdom[pc]
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
		ipdom[start+i] = -1
		if d := idom[i]; d >= 0 && d != int32(exit) {
			ipdom[start+i] = start + int(d)
		}
	}
}

package verifier

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/structure"
)

// subprog is one function: the entry program or a BPF-to-BPF callee,
// spanning pcs [start, end).
type subprog struct {
	start, end int
	calls      []int // pcs of the pseudo-calls it makes
	depth      int   // stack bytes it uses (deepest offset, rounded to 8)
}

// structure validates the program's structure (package structure: fields,
// LD_IMM64 pairs, jump and call targets, functions), then rejects what the
// verifier refuses on top of it: callx, unreachable instructions,
// recursion and call chains deeper than MaxCallDepth. It marks the prune
// points and loop heads the walk uses.
func (ck *checker) structure() *Error {
	p, e := structure.Validate(ck.insns, structure.Options{Maps: len(ck.maps)})
	if e != nil {
		return ck.structErr(e)
	}
	ck.prog = p
	n := len(ck.insns)
	ck.subOf = make([]int, n)
	for i, f := range p.Funcs {
		ck.subs = append(ck.subs, subprog{start: f.Start, end: f.End, calls: f.Calls})
		for pc := f.Start; pc < f.End; pc++ {
			ck.subOf[pc] = i
		}
	}
	for pc := 0; pc < n; pc++ {
		k := p.Kind(pc)
		switch {
		case k.IsJump():
			t := p.Target(pc)
			ck.prune[t] = true
			if t <= pc {
				ck.loopHead[t] = true
				ck.loopEnd[t] = max(ck.loopEnd[t], pc)
			}
			if k == structure.Branch {
				ck.prune[pc+1] = true
			}
		case k == structure.LocalCall:
			ck.prune[p.Target(pc)] = true
		}
	}
	if e := ck.reachable(); e != nil {
		return e
	}
	if e := p.CheckCalls(ck.maxDepth); e != nil {
		return ck.structErr(e)
	}
	return nil
}

// structErr turns a structural fault into the verifier's error: the codes
// are the same numbers (TestStructureCodes).
func (ck *checker) structErr(e *structure.Error) *Error {
	return ck.errorf(Code(e.Code), e.PC, "%s", e.Msg)
}

// jumpTarget returns the target of the jump at pc and whether it jumps.
func (ck *checker) jumpTarget(pc int) (int, bool) {
	if ck.prog.Kind(pc).IsJump() {
		return ck.prog.Target(pc), true
	}
	return 0, false
}

// isGoto reports an unconditional jump.
func isGoto(ins asm.Instruction) bool {
	return ins.Op.Class().IsJump() && ins.Op.JumpOp() == asm.JumpA
}

func isPseudoCall(ins asm.Instruction) bool { return ins.Op == asm.OpCall && ins.Src == asm.PseudoCall }

// next returns the fall-through pc of the instruction at pc.
func (ck *checker) next(pc int) int { return ck.prog.Next(pc) }

// reachable rejects instructions no path reaches.
func (ck *checker) reachable() *Error {
	n := len(ck.insns)
	seen := make([]bool, n)
	work := []int{0}
	seen[0] = true
	push := func(t int) {
		if t >= 0 && t < n && !seen[t] {
			seen[t] = true
			work = append(work, t)
		}
	}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		k := ck.prog.Kind(pc)
		if t := ck.prog.Target(pc); t >= 0 {
			push(t)
		}
		if k.Falls() {
			push(ck.next(pc))
		}
	}
	for pc := 0; pc < n; pc++ {
		if !seen[pc] && !ck.prog.IsSecond(pc) {
			return ck.errorf(UnreachableCode, pc, "no path from the entry reaches this instruction")
		}
	}
	return nil
}

// usesHelperArgs returns how many argument registers the call at ins
// reads: the helper's prototype, or all five for subprograms and unknown
// helpers.
func (ck *checker) callArgs(ins asm.Instruction) int {
	if ins.Src == asm.PseudoHelper {
		if p := ck.proto(helpers.ID(ins.Imm)); p != nil {
			return p.NumArgs()
		}
	}
	return 5
}

package verifier

import "github.com/ncclbpf/ncclbpf/asm"

// regSet is a set of registers, bit r for register r.
type regSet uint16

const argRegs regSet = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5

// usesDefs returns the registers ins reads and writes.
func (ck *checker) usesDefs(ins asm.Instruction) (use, def regSet) {
	d, s := regSet(1)<<ins.Dst, regSet(1)<<ins.Src
	op := ins.Op
	switch op.Class() {
	case asm.ClassALU, asm.ClassALU64:
		switch {
		case op.ALUOp() == asm.ALUMov && op.Source() == asm.SourceX:
			return s, d
		case op.ALUOp() == asm.ALUMov:
			return 0, d
		case op.Source() == asm.SourceX && op.ALUOp() != asm.ALUEnd:
			return d | s, d
		}
		return d, d
	case asm.ClassLD:
		return 0, d
	case asm.ClassLDX:
		return s, d
	case asm.ClassST:
		return d, 0
	case asm.ClassSTX:
		if op.Mode() == asm.ModeAtomic {
			switch {
			case ins.Imm == asm.AtomicCmpXchg:
				return d | s | 1, 1
			case ins.Imm&asm.AtomicFetch != 0:
				return d | s, s
			}
		}
		return d | s, 0
	case asm.ClassJMP, asm.ClassJMP32:
		switch op.JumpOp() {
		case asm.JumpA:
			return 0, 0
		case asm.JumpExit:
			return 1, 0
		case asm.JumpCall:
			n := ck.callArgs(ins)
			return regSet(1<<(n+1)-2) & argRegs, argRegs | 1
		}
		if op.Source() == asm.SourceX {
			return d | s, 0
		}
		return d, 0
	}
	return 0, 0
}

// liveness computes, for every pc, the registers that some path from it
// reads before writing.
func (ck *checker) liveness() {
	n := len(ck.insns)
	ck.live = make([]regSet, n)
	use := make([]regSet, n)
	def := make([]regSet, n)
	for pc := 0; pc < n; pc++ {
		if !ck.prog.IsSecond(pc) {
			use[pc], def[pc] = ck.usesDefs(ck.insns[pc])
		}
	}
	for changed := true; changed; {
		changed = false
		for pc := n - 1; pc >= 0; pc-- {
			if ck.prog.IsSecond(pc) {
				continue
			}
			ins := ck.insns[pc]
			var out regSet
			if t, ok := ck.jumpTarget(pc); ok {
				out |= ck.live[t]
			}
			if ins.Op != asm.OpExit && !isGoto(ins) {
				if nx := ck.next(pc); nx < n {
					out |= ck.live[nx]
				}
			}
			in := use[pc] | out&^def[pc]
			if in != ck.live[pc] {
				ck.live[pc] = in
				changed = true
			}
		}
	}
}

package analysis

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/structure"
)

// Select reports whether the conditional jump at pc may be lowered as a
// select (cmov, csel) of the instruction it jumps over: its target is
// pc+2, no other jump lands on pc+1, and the instruction at pc+1 is an ALU
// instruction that a backend can compute into a scratch register without
// writing any eBPF register and without a fault: add, sub, or, and, xor,
// mul, mov (not movsx), neg, and shifts by a constant, 32- or 64-bit. A
// backend that selects emits that instruction with the jump and nothing
// for pc+1.
func (a *Info) Select(pc int) bool {
	next := pc + 1
	if a.Structure.Kind(pc) != structure.Branch || a.Structure.Target(pc) != pc+2 ||
		next >= len(a.insns) || a.isTarget[next] {
		return false
	}
	ins := a.insns[next]
	switch ins.Op.Class() {
	case asm.ClassALU, asm.ClassALU64:
	default:
		return false
	}
	x := ins.Op.Source() == asm.SourceX
	switch ins.Op.ALUOp() {
	case asm.ALUAdd, asm.ALUSub, asm.ALUOr, asm.ALUAnd, asm.ALUXor, asm.ALUMul:
		return true
	case asm.ALUMov:
		return !x || ins.Off == 0
	case asm.ALULsh, asm.ALURsh, asm.ALUArsh, asm.ALUNeg:
		return !x
	}
	return false
}

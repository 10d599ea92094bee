package amd64

import "github.com/ncclbpf/ncclbpf/asm"

// A conditional jump over one ALU instruction ("if !(a op b) x = f(x)",
// the shape of clamps, min/max and conditional sums) is lowered without a
// branch: f(x) is computed into a scratch register, then the comparison,
// then a cmov on the opposite condition writes it to x. A branch whose
// outcome follows the data mispredicts about half of the time; the cmov
// costs one instruction more when it would have been predicted. The ALU
// instruction is then emitted by its jump (c.fused), not on its own.
// Which jumps qualify is analysis.Info.Select.

// selectValue emits the computation of the ALU instruction ins (one that
// analysis.Info.Select accepts) into tmp1 and returns the register that
// holds its 64-bit result (tmp1, or the source register of a 64-bit mov).
// It writes no eBPF register; it may change the flags.
func (c *compiler) selectValue(ins asm.Instruction) reg {
	w := ins.Op.Class() == asm.ClassALU64
	x := ins.Op.Source() == asm.SourceX
	dst := regMap[ins.Dst]
	src := regMap[ins.Src%asm.NumRegisters]
	switch op := ins.Op.ALUOp(); op {
	case asm.ALUMov:
		switch {
		case x && w:
			return src
		case x:
			c.aluRR(opMovMR, false, tmp1, src)
		case w:
			c.loadImm(tmp1, uint64(int64(ins.Imm)))
		default:
			c.loadImm(tmp1, uint64(uint32(ins.Imm)))
		}
	case asm.ALUMul:
		if x {
			c.aluRR(opMovMR, true, tmp1, dst)
			c.imulRR(w, tmp1, src)
		} else {
			c.imulRRI(w, tmp1, dst, ins.Imm)
		}
	case asm.ALULsh, asm.ALURsh, asm.ALUArsh:
		ext := byte(extShl)
		if op == asm.ALURsh {
			ext = extShr
		} else if op == asm.ALUArsh {
			ext = extSar
		}
		c.aluRR(opMovMR, w, tmp1, dst)
		c.shift(ext, w, false, tmp1, 0, ins.Imm)
	case asm.ALUNeg:
		c.aluRR(opMovMR, w, tmp1, dst)
		c.unaryR(extNeg, w, tmp1)
	default: // add, sub, or, and, xor
		mr, ext := aluMR(op)
		c.aluRR(opMovMR, w, tmp1, dst)
		if x {
			c.aluRR(mr, w, tmp1, src)
		} else {
			c.aluRI(ext, w, tmp1, ins.Imm)
		}
	}
	return tmp1
}

// selectJump lowers the conditional jump ins at pc over the instruction at
// pc+1 with a cmov when analysis.Info.Select allows. It reports whether it
// did.
func (c *compiler) selectJump(pc int, ins asm.Instruction, cc byte) bool {
	if !c.Select(pc) {
		return false
	}
	next := pc + 1
	alu := c.insns[next]
	v := c.selectValue(alu)
	c.compare(ins)
	// Jump taken: x is left as it is; not taken: x = f(x).
	c.cmovRR(cc^1, true, regMap[alu.Dst], v)
	c.fused = next
	return true
}

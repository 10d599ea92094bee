package arm64

import "github.com/ncclbpf/ncclbpf/asm"

// A conditional jump over one ALU instruction (analysis.Info.Select: "if
// !(a op b) x = f(x)", the shape of clamps, min/max and conditional sums)
// is lowered without a branch: f(x) is computed into tmp3, then the
// comparison, then "csel x, x, tmp3, cond" keeps x when the jump would be
// taken. A branch whose outcome follows the data mispredicts about half of
// the time; the csel costs one instruction more when it would have been
// predicted. The ALU instruction is then emitted by its jump (c.fused), not
// on its own.

// selectJump lowers the conditional jump ins at pc over the instruction at
// pc+1 with a csel when analysis.Info.Select allows. It reports whether it
// did.
func (c *compiler) selectJump(pc int, ins asm.Instruction, cc cond) (bool, error) {
	if !c.Select(pc) {
		return false, nil
	}
	next := pc + 1
	alu := c.insns[next]
	dst := regMap[alu.Dst]
	v := tmp3
	if alu.Op.Class() == asm.ClassALU64 && alu.Op.ALUOp() == asm.ALUMov && alu.Op.Source() == asm.SourceX {
		v = regMap[alu.Src] // a 64-bit mov selects its source as it is
	} else if err := c.alu(next, alu, tmp3); err != nil {
		return false, err
	}
	c.compare(ins)
	c.emit(encCSEL(dst, dst, v, cc))
	c.fused = next
	return true, nil
}

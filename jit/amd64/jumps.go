package amd64

import "github.com/ncclbpf/ncclbpf/asm"

// jumpCC maps eBPF conditional jumps to x86 condition codes (after
// "cmp dst, src" or, for jset, "test dst, src").
var jumpCC = [16]byte{
	asm.JumpEq >> 4:  ccE,
	asm.JumpGT >> 4:  ccA,
	asm.JumpGE >> 4:  ccAE,
	asm.JumpSet >> 4: ccNE,
	asm.JumpNE >> 4:  ccNE,
	asm.JumpSGT >> 4: ccG,
	asm.JumpSGE >> 4: ccGE,
	asm.JumpLT >> 4:  ccB,
	asm.JumpLE >> 4:  ccBE,
	asm.JumpSLT >> 4: ccL,
	asm.JumpSLE >> 4: ccLE,
}

// Goto emits ja and gotol. The back edge to a loop head that tests for the
// exit repeats the head's test (analysis.Info.RotateLoop): the jump back
// is then taken on the opposite condition, to the instruction after the
// head.
func (c *compiler) Goto(pc, target int) {
	if head, ok := c.RotateLoop(pc); ok {
		ins := c.insns[head]
		c.compare(ins)
		c.jmpBack(jumpCC[ins.Op.JumpOp()>>4]^1, false, c.pcOff[head+1])
		c.jumpTo(0, true, pc, c.Structure.Target(head))
		return
	}
	c.jumpTo(0, true, pc, target)
}

// Branch emits a conditional JMP or JMP32 instruction. A jump over one
// ALU instruction may become a cmov (select.go); jeq and jne against 0
// right after an add, sub, and, or or xor of the same register reuse its
// flags.
func (c *compiler) Branch(pc int, ins asm.Instruction, t int) error {
	op := ins.Op.JumpOp()
	cc := jumpCC[op>>4]
	if cc == 0 {
		return errAt(pc, ins, "unknown jump operation %#x", uint8(op))
	}
	if c.selectJump(pc, ins, cc) {
		return nil
	}
	if !c.flagsSet(pc, ins) {
		c.compare(ins)
	}
	c.jumpTo(cc, false, pc, t)
	return nil
}

// compare sets the flags for the conditional jump ins.
func (c *compiler) compare(ins asm.Instruction) {
	w := ins.Op.Class() == asm.ClassJMP
	op := ins.Op.JumpOp()
	dst := regMap[ins.Dst]
	switch {
	case ins.Op.Source() == asm.SourceX && op == asm.JumpSet:
		c.aluRR(opTestMR, w, dst, regMap[ins.Src])
	case ins.Op.Source() == asm.SourceX:
		c.aluRR(opCmpMR, w, dst, regMap[ins.Src])
	case op == asm.JumpSet:
		c.testRI(w, dst, ins.Imm)
	case ins.Imm == 0:
		// test r, r sets ZF, SF, CF=0, OF=0 exactly as cmp r, 0 does.
		c.aluRR(opTestMR, w, dst, dst)
	default:
		c.aluRI(extCmp, w, dst, ins.Imm)
	}
}

// flagsSet reports whether the flags already say what jeq or jne ins at pc
// needs: ins compares a register with 0, the instruction before it (which
// alone reaches pc) left its result in that register with ZF set from it,
// and that result is as wide as the comparison (a 32-bit result is also
// its zero-extended 64-bit value).
func (c *compiler) flagsSet(pc int, ins asm.Instruction) bool {
	op := ins.Op.JumpOp()
	if (op != asm.JumpEq && op != asm.JumpNE) || ins.Op.Source() != asm.SourceK || ins.Imm != 0 {
		return false
	}
	f := c.flags
	return f.pc == pc-1 && f.end == c.Len() && !c.IsTarget(pc) && f.reg == regMap[ins.Dst] &&
		(!f.w || ins.Op.Class() == asm.ClassJMP)
}

// jumpTo emits a jump (always, or on cc) from pc to the instruction at t.
// Backward jumps are resolved at once (short when they fit); forward ones
// go through the fix-up table.
func (c *compiler) jumpTo(cc byte, always bool, pc, t int) {
	if t == pc+1 {
		return
	}
	if t <= pc {
		c.jmpBack(cc, always, c.pcOff[t])
		return
	}
	var at int32
	if always {
		at = c.jmpRel32()
	} else {
		at = c.jccRel32(cc)
	}
	c.fixups = append(c.fixups, fixup{at: at, target: int32(t), kind: fixJump})
}

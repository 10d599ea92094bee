package amd64

import "github.com/ncclbpf/ncclbpf/asm"

// aluMR returns the x86 MR opcode and group-1 extension of the simple
// two-operand eBPF ALU operations.
func aluMR(op asm.ALUOp) (mr, ext byte) {
	switch op {
	case asm.ALUAdd:
		return opAddMR, extAdd
	case asm.ALUSub:
		return opSubMR, extSub
	case asm.ALUOr:
		return opOrMR, extOr
	case asm.ALUAnd:
		return opAndMR, extAnd
	default: // asm.ALUXor
		return opXorMR, extXor
	}
}

// ALU emits an ALU (32-bit, zero-extending) or ALU64 instruction.
func (c *compiler) ALU(pc int, ins asm.Instruction) error {
	if pc == c.fused {
		return nil // emitted by the jump before it
	}
	w := ins.Op.Class() == asm.ClassALU64
	x := ins.Op.Source() == asm.SourceX
	dst := regMap[ins.Dst]
	src := regMap[ins.Src%asm.NumRegisters]
	op := ins.Op.ALUOp()
	switch op {
	case asm.ALUAdd, asm.ALUSub, asm.ALUOr, asm.ALUAnd, asm.ALUXor:
		mr, ext := aluMR(op)
		if x {
			c.aluRR(mr, w, dst, src)
		} else {
			c.aluRI(ext, w, dst, ins.Imm)
		}
		c.flags = flagsAt{pc: pc, end: c.Len(), reg: dst, w: w}
	case asm.ALUMov:
		return c.mov(pc, ins, w, x, dst, src)
	case asm.ALUMul:
		if x {
			c.imulRR(w, dst, src)
		} else {
			c.imulRRI(w, dst, dst, ins.Imm)
		}
	case asm.ALUDiv, asm.ALUMod:
		c.divmod(w, x, ins.Off == 1, op == asm.ALUMod, dst, src, ins.Imm)
	case asm.ALULsh:
		c.shift(extShl, w, x, dst, src, ins.Imm)
	case asm.ALURsh:
		c.shift(extShr, w, x, dst, src, ins.Imm)
	case asm.ALUArsh:
		c.shift(extSar, w, x, dst, src, ins.Imm)
	case asm.ALUNeg:
		c.unaryR(extNeg, w, dst)
	case asm.ALUEnd:
		return c.endian(pc, ins, w, x, dst)
	default:
		return errAt(pc, ins, "unknown ALU operation %#x", uint8(op))
	}
	return nil
}

// mov emits mov, mov32 and the sign-extending movsx forms (Off 8, 16, 32).
func (c *compiler) mov(pc int, ins asm.Instruction, w, x bool, dst, src reg) error {
	if !x {
		if w {
			c.loadImm(dst, uint64(int64(ins.Imm)))
		} else {
			c.movRI32(dst, uint32(ins.Imm))
		}
		return nil
	}
	switch ins.Off {
	case 0:
		if !w || dst != src {
			c.aluRR(opMovMR, w, dst, src)
		}
	case 8, 16:
		c.movsxRR(w, int(ins.Off), dst, src)
	case 32:
		c.movsxRR(true, 32, dst, src)
	default:
		return errAt(pc, ins, "movsx offset %d (want 8, 16 or 32)", ins.Off)
	}
	return nil
}

// divmod emits unsigned or signed division or modulo with eBPF semantics:
// x/0 = 0, x%0 = x, and for signed operations x/-1 = -x and x%-1 = 0
// (so INT_MIN/-1 wraps instead of raising #DE). 32-bit forms use the low
// halves and zero-extend the result. rax (r0) and rdx (r3) are preserved
// unless they are the destination; the divisor goes through r11.
func (c *compiler) divmod(w, x, signed, isMod bool, dst, src reg, imm int32) {
	var toZero, toMinus1 int32 = -1, -1
	if x {
		c.aluRR(opMovMR, w, tmp3, src)
		c.aluRR(opTestMR, w, tmp3, tmp3)
		toZero = c.jccRel8(ccE)
		if signed {
			c.aluRI(extCmp, w, tmp3, -1)
			toMinus1 = c.jccRel8(ccE)
		}
	} else {
		switch {
		case imm == 0:
			c.divByZero(w, isMod, dst)
			return
		case signed && imm == -1:
			c.divByMinus1(w, isMod, dst)
			return
		case w:
			c.loadImm(tmp3, uint64(int64(imm)))
		default:
			c.movRI32(tmp3, uint32(imm))
		}
	}
	if dst != rax {
		c.aluRR(opMovMR, true, tmp1, rax)
		c.aluRR(opMovMR, true, rax, dst)
	}
	if dst != rdx {
		c.aluRR(opMovMR, true, tmp2, rdx)
	}
	switch {
	case signed && w:
		c.cqo()
	case signed:
		c.cdq()
	default:
		c.aluRR(opXorMR, false, rdx, rdx)
	}
	if signed {
		c.unaryR(extIdiv, w, tmp3)
	} else {
		c.unaryR(extDiv, w, tmp3)
	}
	res := rax
	if isMod {
		res = rdx
	}
	if dst != res {
		c.aluRR(opMovMR, true, dst, res)
	}
	if dst != rax {
		c.aluRR(opMovMR, true, rax, tmp1)
	}
	if dst != rdx {
		c.aluRR(opMovMR, true, rdx, tmp2)
	}
	if !x {
		return
	}
	done := c.jmpRel8()
	c.bindRel8(toZero)
	c.divByZero(w, isMod, dst)
	var done2 int32 = -1
	if signed {
		done2 = c.jmpRel8()
		c.bindRel8(toMinus1)
		c.divByMinus1(w, isMod, dst)
	}
	c.bindRel8(done)
	if done2 >= 0 {
		c.bindRel8(done2)
	}
}

// divByZero: quotient 0, remainder the (zero-extended) dividend.
func (c *compiler) divByZero(w, isMod bool, dst reg) {
	switch {
	case !isMod:
		c.aluRR(opXorMR, false, dst, dst)
	case !w:
		c.aluRR(opMovMR, false, dst, dst)
	}
}

// divByMinus1: quotient -x (wrapping), remainder 0.
func (c *compiler) divByMinus1(w, isMod bool, dst reg) {
	if isMod {
		c.aluRR(opXorMR, false, dst, dst)
		return
	}
	c.unaryR(extNeg, w, dst)
}

// shift emits shl, shr and sar. Counts are masked to 5 (32-bit) or 6 bits
// (64-bit), as x86 does for register counts. A register count must be in
// cl, which holds r4: r4 is kept in r11 meanwhile.
func (c *compiler) shift(ext byte, w, x bool, dst, src reg, imm int32) {
	if !x {
		mask := int32(31)
		if w {
			mask = 63
		}
		n := uint8(imm & mask)
		if n == 0 {
			if !w {
				c.aluRR(opMovMR, false, dst, dst)
			}
			return
		}
		c.shiftRI(ext, w, dst, n)
		return
	}
	if src == rcx {
		c.shiftRCL(ext, w, dst)
		return
	}
	c.aluRR(opMovMR, true, tmp3, rcx)
	c.aluRR(opMovMR, true, rcx, src)
	d := dst
	if dst == rcx {
		d = tmp3
	}
	c.shiftRCL(ext, w, d)
	c.aluRR(opMovMR, true, rcx, tmp3)
}

// endian emits le (ALU|END|K), be (ALU|END|X) and bswap (ALU64|END|K).
func (c *compiler) endian(pc int, ins asm.Instruction, w, x bool, dst reg) error {
	swap := w || x
	switch ins.Imm {
	case 16:
		if swap {
			c.rol16RI(dst, 8)
		}
		c.movzxRR(16, dst, dst)
	case 32:
		if swap {
			c.bswapR(false, dst)
		} else {
			c.aluRR(opMovMR, false, dst, dst)
		}
	case 64:
		if swap {
			c.bswapR(true, dst)
		}
	default:
		return errAt(pc, ins, "byte swap width %d (want 16, 32 or 64)", ins.Imm)
	}
	return nil
}

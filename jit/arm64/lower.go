package arm64

import "github.com/ncclbpf/ncclbpf/asm"

// ALU emits an ALU (32-bit, zero-extending: every W-register write clears
// the upper half) or ALU64 instruction.
func (c *compiler) ALU(pc int, ins asm.Instruction) error {
	if pc == c.fused {
		return nil // emitted by the jump before it (select.go)
	}
	return c.alu(pc, ins, regMap[ins.Dst])
}

// alu emits the ALU instruction ins with its result written to rd: the
// destination register, or for a select (select.go) a scratch register,
// then only for the forms analysis.Info.Select accepts.
func (c *compiler) alu(pc int, ins asm.Instruction, rd reg) error {
	w := ins.Op.Class() == asm.ClassALU64
	x := ins.Op.Source() == asm.SourceX
	dst := regMap[ins.Dst]
	src := regMap[ins.Src%asm.NumRegisters]
	op := ins.Op.ALUOp()
	// operand returns src, or the immediate in tmp2.
	operand := func() reg {
		if x {
			return src
		}
		c.loadImm(w, tmp2, uint64(int64(ins.Imm)))
		return tmp2
	}
	switch op {
	case asm.ALUAdd, asm.ALUSub:
		add := op == asm.ALUAdd
		if !x && ins.Imm > -4096 && ins.Imm < 4096 {
			imm := ins.Imm
			if imm < 0 {
				imm, add = -imm, !add
			}
			if add {
				c.emit(encRRI12(opADDi, w, rd, dst, uint32(imm)))
			} else {
				c.emit(encRRI12(opSUBi, w, rd, dst, uint32(imm)))
			}
			return nil
		}
		o := opADD
		if !add {
			o = opSUB
		}
		c.emit(encRRR(o, w, rd, dst, operand()))
	case asm.ALUOr:
		c.emit(encRRR(opORR, w, rd, dst, operand()))
	case asm.ALUAnd:
		c.emit(encRRR(opAND, w, rd, dst, operand()))
	case asm.ALUXor:
		c.emit(encRRR(opEOR, w, rd, dst, operand()))
	case asm.ALUMov:
		return c.mov(pc, ins, w, x, rd, src)
	case asm.ALUMul:
		c.emit(encR4(opMADD, w, rd, dst, operand(), xzr))
	case asm.ALUDiv, asm.ALUMod:
		// UDIV/SDIV already give eBPF's results: x/0 = 0 and INT_MIN/-1 =
		// INT_MIN (no trap); the remainder x - (x/y)*y is then x for y = 0
		// and 0 for y = -1, as eBPF requires.
		div := opUDIV
		if ins.Off == 1 {
			div = opSDIV
		}
		y := operand()
		if op == asm.ALUDiv {
			c.emit(encRRR(div, w, dst, dst, y))
		} else {
			c.emit(encRRR(div, w, tmp1, dst, y), encR4(opMSUB, w, dst, tmp1, y, dst))
		}
	case asm.ALULsh, asm.ALURsh, asm.ALUArsh:
		c.shift(op, w, x, rd, dst, src, ins.Imm)
	case asm.ALUNeg:
		c.emit(encRRR(opSUB, w, rd, xzr, dst))
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
		c.loadImm(w, dst, uint64(int64(ins.Imm)))
		return nil
	}
	switch ins.Off {
	case 0:
		if !w || dst != src {
			c.emit(encRRR(opORR, w, dst, xzr, src))
		}
	case 8, 16:
		c.emit(encBitfield(opSBFM, w, dst, src, 0, uint32(ins.Off)-1))
	case 32:
		c.emit(encBitfield(opSBFM, true, dst, src, 0, 31))
	default:
		return errAt(pc, ins, "movsx offset %d (want 8, 16 or 32)", ins.Off)
	}
	return nil
}

// shift emits lsh, rsh and arsh of dst into rd. LSLV/LSRV/ASRV take the
// count modulo the width, which is eBPF's masking; immediate counts are
// masked here.
func (c *compiler) shift(op asm.ALUOp, w, x bool, rd, dst, src reg, imm int32) {
	if x {
		o := map[asm.ALUOp]uint32{asm.ALULsh: opLSLV, asm.ALURsh: opLSRV, asm.ALUArsh: opASRV}[op]
		c.emit(encRRR(o, w, rd, dst, src))
		return
	}
	size := uint32(32)
	if w {
		size = 64
	}
	n := uint32(imm) & (size - 1)
	if n == 0 {
		if !w || rd != dst {
			c.emit(encRRR(opORR, w, rd, xzr, dst))
		}
		return
	}
	switch op {
	case asm.ALULsh:
		c.emit(encBitfield(opUBFM, w, rd, dst, (size-n)%size, size-1-n))
	case asm.ALURsh:
		c.emit(encBitfield(opUBFM, w, rd, dst, n, size-1))
	default:
		c.emit(encBitfield(opSBFM, w, rd, dst, n, size-1))
	}
}

// endian emits le (ALU|END|K), be (ALU|END|X) and bswap (ALU64|END|K) on a
// little-endian CPU.
func (c *compiler) endian(pc int, ins asm.Instruction, w, x bool, dst reg) error {
	swap := w || x
	switch ins.Imm {
	case 16:
		if swap {
			c.emit(encRR(opREV16w, dst, dst))
		}
		c.emit(encBitfield(opUBFM, false, dst, dst, 0, 15))
	case 32:
		if swap {
			c.emit(encRR(opREVw, dst, dst))
		} else {
			c.emit(encRRR(opORR, false, dst, xzr, dst))
		}
	case 64:
		if swap {
			c.emit(encRR(opREVx, dst, dst))
		}
	default:
		return errAt(pc, ins, "byte swap width %d (want 16, 32 or 64)", ins.Imm)
	}
	return nil
}

// sizeCode returns the load/store size field for 1, 2, 4 or 8 bytes.
func sizeCode(bytes int) uint32 {
	switch bytes {
	case 1:
		return 0
	case 2:
		return 1
	case 4:
		return 2
	}
	return 3
}

// memOp emits a load or store of rt at [rn + off], choosing the scaled
// unsigned-offset form, the unscaled 9-bit form or a register offset
// (tmp1) by the offset.
func (c *compiler) memOp(bytes int, opc uint32, rt, rn reg, off int32) {
	size := sizeCode(bytes)
	switch {
	case off >= 0 && off%int32(bytes) == 0 && off/int32(bytes) < 4096:
		c.emit(encLdStUimm(size, opc, rt, rn, uint32(off/int32(bytes))))
	case off >= -256 && off < 256:
		c.emit(encLdStUnscaled(size, opc, rt, rn, off))
	default:
		c.loadImm(true, tmp1, uint64(int64(off)))
		c.emit(encLdStReg(size, opc, rt, rn, tmp1, false))
	}
}

// Load emits LDX: zero-extending (MEM) or sign-extending (MEMSX) loads.
func (c *compiler) Load(pc int, ins asm.Instruction) error {
	size := ins.Op.Size().Bytes()
	dst, base := regMap[ins.Dst], regMap[ins.Src]
	switch ins.Op.Mode() {
	case asm.ModeMEM:
		c.memOp(size, ldstLoad, dst, base, int32(ins.Off))
	case asm.ModeMEMSX:
		c.memOp(size, ldstLoadSX, dst, base, int32(ins.Off))
	default:
		return errAt(pc, ins, "unsupported load mode %#x", uint8(ins.Op.Mode()))
	}
	return nil
}

// Store emits ST (immediate), STX (register) and STX|ATOMIC.
func (c *compiler) Store(pc int, ins asm.Instruction) error {
	size := ins.Op.Size().Bytes()
	base := regMap[ins.Dst]
	mode := ins.Op.Mode()
	switch {
	case mode == asm.ModeMEM && ins.Op.Class() == asm.ClassST:
		v := xzr
		if ins.Imm != 0 {
			c.loadImm(size == 8, tmp2, uint64(int64(ins.Imm)))
			v = tmp2
		}
		c.memOp(size, ldstStore, v, base, int32(ins.Off))
	case mode == asm.ModeMEM:
		c.memOp(size, ldstStore, regMap[ins.Src], base, int32(ins.Off))
	case mode == asm.ModeAtomic && ins.Op.Class() == asm.ClassSTX:
		return c.atomic(pc, ins)
	default:
		return errAt(pc, ins, "unsupported store mode %#x", uint8(mode))
	}
	return nil
}

// atomic emits STX|ATOMIC. Every atomic operation is sequentially
// consistent, as x86's locked instructions are: with FEAT_LSE the
// acquire-release forms (LD<op>AL, SWPAL, CASAL; the non-fetch forms too,
// with the old value dropped into a scratch register, since an XZR target
// would lose the acquire half); without it, an LDAXR/STLXR loop followed
// by DMB ISH.
func (c *compiler) atomic(pc int, ins asm.Instruction) error {
	w := ins.Op.Size() == asm.SizeDW // the structure allows only W and DW
	base, src, off := regMap[ins.Dst], regMap[ins.Src], int32(ins.Off)
	// The address goes to tmp1.
	switch {
	case off == 0:
		c.mov64(tmp1, base)
	case off > 0 && off < 4096:
		c.emit(encRRI12(opADDi, true, tmp1, base, uint32(off)))
	case off < 0 && off > -4096:
		c.emit(encRRI12(opSUBi, true, tmp1, base, uint32(-off)))
	default:
		c.loadImm(true, tmp1, uint64(int64(off)))
		c.emit(encRRR(opADD, true, tmp1, base, tmp1))
	}
	fetch := ins.Imm&asm.AtomicFetch != 0
	var lseOp uint32
	var rrr uint32
	switch ins.Imm &^ asm.AtomicFetch {
	case asm.AtomicAdd:
		lseOp, rrr = lseADD, opADD
	case asm.AtomicOr:
		lseOp, rrr = lseSET, opORR
	case asm.AtomicAnd:
		lseOp, rrr = lseCLR, opAND
	case asm.AtomicXor:
		lseOp, rrr = lseEOR, opEOR
	default:
		switch ins.Imm {
		case asm.AtomicXchg:
			c.xchg(w, src)
			return nil
		case asm.AtomicCmpXchg:
			c.cmpxchg(w, src)
			return nil
		}
		return errAt(pc, ins, "unknown atomic operation %#x", ins.Imm)
	}
	if c.lse {
		operand, old := src, tmp3
		if lseOp == lseCLR { // LDCLR clears the bits set in its operand
			c.emit(encRRR(opORN, w, tmp2, xzr, src))
			operand = tmp2
		}
		if fetch {
			old = src
		}
		c.emit(encLSE(lseOp, w, operand, old, tmp1))
		return nil
	}
	loop := c.Len()
	c.emit(
		encLDAXR(w, tmp2, tmp1),
		encRRR(rrr, w, tmp3, tmp2, src),
		encSTLXR(w, tmp4, tmp3, tmp1),
	)
	c.emit(encCBNZ(false, tmp4, loop-c.Len()))
	c.emit(insDMBISH)
	if fetch {
		c.emit(encRRR(opORR, w, src, xzr, tmp2))
	}
	return nil
}

// xchg: src = old, [tmp1] = src.
func (c *compiler) xchg(w bool, src reg) {
	if c.lse {
		c.emit(encLSE(lseSWP, w, src, src, tmp1))
		return
	}
	loop := c.Len()
	c.emit(encLDAXR(w, tmp2, tmp1), encSTLXR(w, tmp4, src, tmp1))
	c.emit(encCBNZ(false, tmp4, loop-c.Len()))
	c.emit(insDMBISH, encRRR(opORR, w, src, xzr, tmp2))
}

// cmpxchg: if [tmp1] == r0 then [tmp1] = src; r0 = old (zero-extended for
// 32 bits).
func (c *compiler) cmpxchg(w bool, src reg) {
	r0 := regMap[asm.R0]
	if c.lse {
		c.emit(encCASAL(w, r0, src, tmp1))
		return
	}
	loop := c.Len()
	c.emit(encLDAXR(w, tmp2, tmp1), encRRR(opSUBS, w, xzr, tmp2, r0))
	c.emit(encBcond(condNE, 12)) // to the barrier
	c.emit(encSTLXR(w, tmp4, src, tmp1))
	c.emit(encCBNZ(false, tmp4, loop-c.Len()))
	c.emit(insDMBISH, encRRR(opORR, w, r0, xzr, tmp2))
}

// Const sets eBPF register r to v (LD_IMM64, folded loads).
func (c *compiler) Const(r asm.Register, v uint64) { c.loadImm(true, regMap[r], v) }

// jumpCC maps eBPF conditional jumps to condition codes (after CMP, or TST
// for jset).
var jumpCC = [16]cond{
	asm.JumpEq >> 4:  condEQ,
	asm.JumpGT >> 4:  condHI,
	asm.JumpGE >> 4:  condHS,
	asm.JumpSet >> 4: condNE,
	asm.JumpNE >> 4:  condNE,
	asm.JumpSGT >> 4: condGT,
	asm.JumpSGE >> 4: condGE,
	asm.JumpLT >> 4:  condLO,
	asm.JumpLE >> 4:  condLS,
	asm.JumpSLT >> 4: condLT,
	asm.JumpSLE >> 4: condLE,
}

// Goto emits ja and gotol. The back edge to a loop head that tests for the
// exit repeats the head's test (analysis.Info.RotateLoop): the branch back
// is then taken on the opposite condition, to the instruction after the
// head.
func (c *compiler) Goto(pc, target int) {
	if head, ok := c.RotateLoop(pc); ok {
		ins := c.insns[head]
		op := ins.Op.JumpOp()
		if ins.Op.Source() == asm.SourceK && ins.Imm == 0 && (op == asm.JumpEq || op == asm.JumpNE) {
			c.cbzTo(op == asm.JumpEq, ins.Op.Class() == asm.ClassJMP, regMap[ins.Dst], pc, head+1)
		} else {
			c.compare(ins)
			c.branchBack(jumpCC[op>>4].invert(), c.pcOff[head+1])
		}
		c.jumpTo(condAL, pc, c.Structure.Target(head))
		return
	}
	c.jumpTo(condAL, pc, target)
}

// Branch emits a conditional JMP or JMP32 instruction: a csel for a jump
// over one ALU instruction (select.go), CBZ/CBNZ for jeq/jne against 0, a
// compare and B.cond otherwise.
func (c *compiler) Branch(pc int, ins asm.Instruction, t int) error {
	op := ins.Op.JumpOp()
	cc := jumpCC[op>>4]
	if cc == 0 && op != asm.JumpEq {
		return errAt(pc, ins, "unknown jump operation %#x", uint8(op))
	}
	if ok, err := c.selectJump(pc, ins, cc); ok || err != nil {
		return err
	}
	if ins.Op.Source() == asm.SourceK && ins.Imm == 0 && (op == asm.JumpEq || op == asm.JumpNE) {
		c.cbzTo(op == asm.JumpNE, ins.Op.Class() == asm.ClassJMP, regMap[ins.Dst], pc, t)
		return nil
	}
	c.compare(ins)
	c.jumpTo(cc, pc, t)
	return nil
}

// compare sets the flags for the conditional jump ins (CMP, or TST for
// jset).
func (c *compiler) compare(ins asm.Instruction) {
	w := ins.Op.Class() == asm.ClassJMP
	op := ins.Op.JumpOp()
	dst := regMap[ins.Dst]
	y := regMap[ins.Src]
	if ins.Op.Source() == asm.SourceK {
		if op != asm.JumpSet && ins.Imm >= 0 && ins.Imm < 4096 {
			c.emit(encRRI12(opSUBSi, w, xzr, dst, uint32(ins.Imm)))
			return
		}
		c.loadImm(w, tmp1, uint64(int64(ins.Imm)))
		y = tmp1
	}
	if op == asm.JumpSet {
		c.emit(encRRR(opANDS, w, xzr, dst, y))
	} else {
		c.emit(encRRR(opSUBS, w, xzr, dst, y))
	}
}

// jumpTo emits a branch (always, or on cc) from pc to the instruction at t.
func (c *compiler) jumpTo(cc cond, pc, t int) {
	if t == pc+1 {
		return
	}
	if t <= pc {
		c.branchBack(cc, c.pcOff[t])
		return
	}
	c.branch(cc, toPC, int32(t))
}

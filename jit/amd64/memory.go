package amd64

import "github.com/ncclbpf/ncclbpf/asm"

// Load emits LDX: zero-extending (MEM) or sign-extending (MEMSX) loads.
func (c *compiler) Load(pc int, ins asm.Instruction) error {
	size := ins.Op.Size().Bytes()
	dst, base := regMap[ins.Dst], regMap[ins.Src]
	switch ins.Op.Mode() {
	case asm.ModeMEM:
		c.loadRM(size, dst, base, int32(ins.Off))
	case asm.ModeMEMSX:
		c.loadsxRM(size, dst, base, int32(ins.Off))
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
		c.storeMI(size, base, int32(ins.Off), ins.Imm)
	case mode == asm.ModeMEM:
		c.storeMR(size, base, int32(ins.Off), regMap[ins.Src])
	case mode == asm.ModeAtomic && ins.Op.Class() == asm.ClassSTX:
		return c.atomic(pc, ins)
	default:
		return errAt(pc, ins, "unsupported store mode %#x", uint8(mode))
	}
	return nil
}

// atomic emits STX|ATOMIC: lock add/or/and/xor, their fetch forms (xadd or
// a cmpxchg loop), xchg and cmpxchg. x86's locked instructions are
// sequentially consistent.
func (c *compiler) atomic(pc int, ins asm.Instruction) error {
	w := ins.Op.Size() == asm.SizeDW // the structure allows only W and DW
	base, src, off := regMap[ins.Dst], regMap[ins.Src], int32(ins.Off)
	switch ins.Imm {
	case asm.AtomicAdd:
		c.lockMR(opAddMR, w, base, off, src)
	case asm.AtomicOr:
		c.lockMR(opOrMR, w, base, off, src)
	case asm.AtomicAnd:
		c.lockMR(opAndMR, w, base, off, src)
	case asm.AtomicXor:
		c.lockMR(opXorMR, w, base, off, src)
	case asm.AtomicAdd | asm.AtomicFetch:
		c.lockXaddMR(w, base, off, src)
	case asm.AtomicOr | asm.AtomicFetch:
		c.fetchLoop(opOrMR, w, base, off, src)
	case asm.AtomicAnd | asm.AtomicFetch:
		c.fetchLoop(opAndMR, w, base, off, src)
	case asm.AtomicXor | asm.AtomicFetch:
		c.fetchLoop(opXorMR, w, base, off, src)
	case asm.AtomicXchg:
		c.xchgMR(w, base, off, src)
	case asm.AtomicCmpXchg:
		c.lockCmpxchgMR(w, base, off, src)
		if !w {
			// A successful 32-bit cmpxchg leaves rax's upper half alone;
			// r0 must hold the zero-extended old value either way.
			c.aluRR(opMovMR, false, rax, rax)
		}
	default:
		return errAt(pc, ins, "unknown atomic operation %#x", ins.Imm)
	}
	return nil
}

// fetchLoop emits an atomic fetch-and-op without a native fetch form:
//
//	mov  r10, rax          ; keep r0 (or the operand, when src is r0)
//	mov  rax, [base+off]
//	loop: mov r11, rax; op r11, src; lock cmpxchg [base+off], r11; jne loop
//	mov  src, rax ; mov rax, r10
//
// A base in rax is first copied to r9.
func (c *compiler) fetchLoop(op byte, w bool, base reg, off int32, src reg) {
	size := 4
	if w {
		size = 8
	}
	if base == rax {
		c.aluRR(opMovMR, true, tmp1, rax)
		base = tmp1
	}
	c.aluRR(opMovMR, true, tmp2, rax)
	operand := src
	if src == rax {
		operand = tmp2
	}
	c.loadRM(size, rax, base, off)
	loop := c.Len()
	c.aluRR(opMovMR, true, tmp3, rax)
	c.aluRR(op, w, tmp3, operand)
	c.lockCmpxchgMR(w, base, off, tmp3)
	c.jmpBack(ccNE, false, loop)
	if src != rax {
		c.aluRR(opMovMR, true, src, rax)
		c.aluRR(opMovMR, true, rax, tmp2)
	}
}

// Const sets eBPF register r to v (LD_IMM64, folded loads).
func (c *compiler) Const(r asm.Register, v uint64) { c.loadImm(regMap[r], v) }

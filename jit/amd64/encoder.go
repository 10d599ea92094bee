package amd64

import "encoding/binary"

// reg is an x86-64 general-purpose register number (the 4-bit encoding).
type reg uint8

// x86-64 registers.
const (
	rax reg = iota
	rcx
	rdx
	rbx
	rsp
	rbp
	rsi
	rdi
	r8
	r9
	r10
	r11
	r12
	r13
	r14
	r15
)

// Condition codes (the low nibble of Jcc: 0F 80+cc rel32, 70+cc rel8).
const (
	ccB  = 0x2 // unsigned <
	ccAE = 0x3 // unsigned >=
	ccE  = 0x4
	ccNE = 0x5
	ccBE = 0x6 // unsigned <=
	ccA  = 0x7 // unsigned >
	ccL  = 0xc // signed <
	ccGE = 0xd // signed >=
	ccLE = 0xe // signed <=
	ccG  = 0xf // signed >
)

// Opcodes of the "op r/m, r" ALU forms (MR encoding).
const (
	opAddMR  = 0x01
	opOrMR   = 0x09
	opAndMR  = 0x21
	opSubMR  = 0x29
	opXorMR  = 0x31
	opCmpMR  = 0x39
	opTestMR = 0x85
	opMovMR  = 0x89
)

// ModRM.reg extensions of group 1 (80/81/83: op r/m, imm).
const (
	extAdd = 0
	extOr  = 1
	extAnd = 4
	extSub = 5
	extXor = 6
	extCmp = 7
)

// ModRM.reg extensions of group 2 (shifts) and group 3 (F7).
const (
	extRol  = 0
	extShl  = 4
	extShr  = 5
	extSar  = 7
	extNeg  = 3
	extDiv  = 6
	extIdiv = 7
	extCall = 2 // FF /2
)

// enc appends x86-64 machine code to a byte slice. Emitters are named by the
// x86 form they produce (op dst, src order as in Intel syntax):
// R register, M memory [base+disp32], I immediate.
type enc struct {
	b []byte
}

// Len is the number of bytes emitted so far.
func (e *enc) Len() int32 { return int32(len(e.b)) }

func (e *enc) byte1(v byte)              { e.b = append(e.b, v) }
func (e *enc) bytes(v ...byte)           { e.b = append(e.b, v...) }
func (e *enc) u32(v uint32)              { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64)              { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) patch32(at int32, v int32) { binary.LittleEndian.PutUint32(e.b[at:], uint32(v)) }

// rex emits a REX prefix when one is needed: 64-bit operand size (w), an
// extended register in ModRM.reg (r), SIB.index (x) or ModRM.rm/base (b),
// or force (an 8-bit access to spl, bpl, sil or dil).
func (e *enc) rex(w bool, r, x, b reg, force bool) {
	v := byte(0x40)
	if w {
		v |= 8
	}
	v |= byte(r>>3) << 2
	v |= byte(x>>3) << 1
	v |= byte(b >> 3)
	if v != 0x40 || force {
		e.byte1(v)
	}
}

// modrmRR emits ModRM for a register-direct operand.
func (e *enc) modrmRR(regField byte, rm reg) { e.byte1(0xc0 | (regField&7)<<3 | byte(rm&7)) }

// modrmMem emits ModRM (and SIB, displacement) for [base+disp].
func (e *enc) modrmMem(regField byte, base reg, disp int32) {
	r := (regField & 7) << 3
	switch {
	case disp == 0 && base&7 != 5:
		e.byte1(0x00 | r | byte(base&7))
		if base&7 == 4 {
			e.byte1(0x24)
		}
	case disp >= -128 && disp <= 127:
		e.byte1(0x40 | r | byte(base&7))
		if base&7 == 4 {
			e.byte1(0x24)
		}
		e.byte1(byte(int8(disp)))
	default:
		e.byte1(0x80 | r | byte(base&7))
		if base&7 == 4 {
			e.byte1(0x24)
		}
		e.u32(uint32(disp))
	}
}

func isByteRegNeedingRex(r reg) bool { return r >= rsp && r <= rdi }

// aluRR emits "op dst, src" in the MR form (add, or, and, sub, xor, cmp, test, mov).
func (e *enc) aluRR(op byte, w bool, dst, src reg) {
	e.rex(w, src, 0, dst, false)
	e.byte1(op)
	e.modrmRR(byte(src), dst)
}

// aluRI emits a group-1 "op dst, imm" (83 /ext ib or 81 /ext id).
func (e *enc) aluRI(ext byte, w bool, dst reg, imm int32) {
	e.rex(w, 0, 0, dst, false)
	if imm >= -128 && imm <= 127 {
		e.byte1(0x83)
		e.modrmRR(ext, dst)
		e.byte1(byte(int8(imm)))
		return
	}
	e.byte1(0x81)
	e.modrmRR(ext, dst)
	e.u32(uint32(imm))
}

// testRI emits "test dst, imm32" (F7 /0 id; sign-extended when w).
func (e *enc) testRI(w bool, dst reg, imm int32) {
	e.rex(w, 0, 0, dst, false)
	e.byte1(0xf7)
	e.modrmRR(0, dst)
	e.u32(uint32(imm))
}

// movRI32 emits "mov dst32, imm32" (B8+r id), which zero-extends.
func (e *enc) movRI32(dst reg, imm uint32) {
	e.rex(false, 0, 0, dst, false)
	e.byte1(0xb8 + byte(dst&7))
	e.u32(imm)
}

// movRI64 emits "movabs dst, imm64" (REX.W B8+r io).
func (e *enc) movRI64(dst reg, imm uint64) {
	e.rex(true, 0, 0, dst, false)
	e.byte1(0xb8 + byte(dst&7))
	e.u64(imm)
}

// movRIsx emits "mov dst, simm32" (REX.W C7 /0 id), sign-extending.
func (e *enc) movRIsx(dst reg, imm int32) {
	e.rex(true, 0, 0, dst, false)
	e.byte1(0xc7)
	e.modrmRR(0, dst)
	e.u32(uint32(imm))
}

// loadImm puts the 64-bit value v in dst with the shortest form.
// It may change flags (xor for 0).
func (e *enc) loadImm(dst reg, v uint64) {
	switch {
	case v == 0:
		e.aluRR(opXorMR, false, dst, dst)
	case v <= 0xffffffff:
		e.movRI32(dst, uint32(v))
	case int64(v) >= -1<<31 && int64(v) < 1<<31:
		e.movRIsx(dst, int32(v))
	default:
		e.movRI64(dst, v)
	}
}

// shiftRI emits a group-2 shift "op dst, n" (C1 /ext ib).
func (e *enc) shiftRI(ext byte, w bool, dst reg, n uint8) {
	e.rex(w, 0, 0, dst, false)
	e.byte1(0xc1)
	e.modrmRR(ext, dst)
	e.byte1(n)
}

// shiftRCL emits a group-2 shift "op dst, cl" (D3 /ext).
func (e *enc) shiftRCL(ext byte, w bool, dst reg) {
	e.rex(w, 0, 0, dst, false)
	e.byte1(0xd3)
	e.modrmRR(ext, dst)
}

// rol16RI emits "rol dst16, n" (66 C1 /0 ib).
func (e *enc) rol16RI(dst reg, n uint8) {
	e.byte1(0x66)
	e.shiftRI(extRol, false, dst, n)
}

// unaryR emits a group-3 "op r" (F7 /ext): neg, div, idiv.
func (e *enc) unaryR(ext byte, w bool, r reg) {
	e.rex(w, 0, 0, r, false)
	e.byte1(0xf7)
	e.modrmRR(ext, r)
}

// imulRR emits "imul dst, src" (0F AF /r).
func (e *enc) imulRR(w bool, dst, src reg) {
	e.rex(w, dst, 0, src, false)
	e.bytes(0x0f, 0xaf)
	e.modrmRR(byte(dst), src)
}

// imulRRI emits "imul dst, src, imm" (6B /r ib or 69 /r id).
func (e *enc) imulRRI(w bool, dst, src reg, imm int32) {
	e.rex(w, dst, 0, src, false)
	if imm >= -128 && imm <= 127 {
		e.byte1(0x6b)
		e.modrmRR(byte(dst), src)
		e.byte1(byte(int8(imm)))
		return
	}
	e.byte1(0x69)
	e.modrmRR(byte(dst), src)
	e.u32(uint32(imm))
}

// cmovRR emits "cmovcc dst, src" (0F 40+cc /r). The 32-bit form zero-extends
// dst even when cc is false; the JIT uses the 64-bit one.
func (e *enc) cmovRR(cc byte, w bool, dst, src reg) {
	e.rex(w, dst, 0, src, false)
	e.bytes(0x0f, 0x40|cc)
	e.modrmRR(byte(dst), src)
}

// bswapR emits "bswap r" (0F C8+r).
func (e *enc) bswapR(w bool, r reg) {
	e.rex(w, 0, 0, r, false)
	e.bytes(0x0f, 0xc8+byte(r&7))
}

// movzxRR emits "movzx dst32, src8/16" (0F B6 / 0F B7).
func (e *enc) movzxRR(bits int, dst, src reg) {
	op := byte(0xb7)
	if bits == 8 {
		op = 0xb6
	}
	e.rex(false, dst, 0, src, bits == 8 && isByteRegNeedingRex(src))
	e.bytes(0x0f, op)
	e.modrmRR(byte(dst), src)
}

// movsxRR emits "movsx dst, src8/16" (0F BE / 0F BF) or "movsxd dst, src32" (REX.W 63).
func (e *enc) movsxRR(w bool, bits int, dst, src reg) {
	switch bits {
	case 32:
		e.rex(true, dst, 0, src, false)
		e.byte1(0x63)
	case 16:
		e.rex(w, dst, 0, src, false)
		e.bytes(0x0f, 0xbf)
	default:
		e.rex(w, dst, 0, src, isByteRegNeedingRex(src))
		e.bytes(0x0f, 0xbe)
	}
	e.modrmRR(byte(dst), src)
}

// loadRM emits a zero-extending load of size bytes: "movzx dst32, byte/word
// [base+disp]", "mov dst32, [base+disp]" or "mov dst, [base+disp]".
func (e *enc) loadRM(size int, dst, base reg, disp int32) {
	switch size {
	case 1, 2:
		e.rex(false, dst, 0, base, false)
		if size == 1 {
			e.bytes(0x0f, 0xb6)
		} else {
			e.bytes(0x0f, 0xb7)
		}
	case 4:
		e.rex(false, dst, 0, base, false)
		e.byte1(0x8b)
	default:
		e.rex(true, dst, 0, base, false)
		e.byte1(0x8b)
	}
	e.modrmMem(byte(dst), base, disp)
}

// loadsxRM emits a sign-extending 64-bit load of size bytes: "movsx dst,
// byte/word [base+disp]" or "movsxd dst, dword [base+disp]".
func (e *enc) loadsxRM(size int, dst, base reg, disp int32) {
	e.rex(true, dst, 0, base, false)
	switch size {
	case 1:
		e.bytes(0x0f, 0xbe)
	case 2:
		e.bytes(0x0f, 0xbf)
	default:
		e.byte1(0x63)
	}
	e.modrmMem(byte(dst), base, disp)
}

// storeMR emits "mov size [base+disp], src".
func (e *enc) storeMR(size int, base reg, disp int32, src reg) {
	switch size {
	case 1:
		e.rex(false, src, 0, base, isByteRegNeedingRex(src))
		e.byte1(0x88)
	case 2:
		e.byte1(0x66)
		e.rex(false, src, 0, base, false)
		e.byte1(0x89)
	case 4:
		e.rex(false, src, 0, base, false)
		e.byte1(0x89)
	default:
		e.rex(true, src, 0, base, false)
		e.byte1(0x89)
	}
	e.modrmMem(byte(src), base, disp)
}

// storeMI emits "mov size [base+disp], imm" (C6 /0 ib, 66 C7 /0 iw, C7 /0 id,
// REX.W C7 /0 id sign-extended).
func (e *enc) storeMI(size int, base reg, disp int32, imm int32) {
	switch size {
	case 1:
		e.rex(false, 0, 0, base, false)
		e.byte1(0xc6)
		e.modrmMem(0, base, disp)
		e.byte1(byte(imm))
	case 2:
		e.byte1(0x66)
		e.rex(false, 0, 0, base, false)
		e.byte1(0xc7)
		e.modrmMem(0, base, disp)
		e.b = binary.LittleEndian.AppendUint16(e.b, uint16(imm))
	default:
		e.rex(size == 8, 0, 0, base, false)
		e.byte1(0xc7)
		e.modrmMem(0, base, disp)
		e.u32(uint32(imm))
	}
}

// lockMR emits "lock op [base+disp], src" for op in add, or, and, xor (MR forms).
func (e *enc) lockMR(op byte, w bool, base reg, disp int32, src reg) {
	e.byte1(0xf0)
	e.rex(w, src, 0, base, false)
	e.byte1(op)
	e.modrmMem(byte(src), base, disp)
}

// lockXaddMR emits "lock xadd [base+disp], src" (F0 0F C1 /r).
func (e *enc) lockXaddMR(w bool, base reg, disp int32, src reg) {
	e.byte1(0xf0)
	e.rex(w, src, 0, base, false)
	e.bytes(0x0f, 0xc1)
	e.modrmMem(byte(src), base, disp)
}

// lockCmpxchgMR emits "lock cmpxchg [base+disp], src" (F0 0F B1 /r).
func (e *enc) lockCmpxchgMR(w bool, base reg, disp int32, src reg) {
	e.byte1(0xf0)
	e.rex(w, src, 0, base, false)
	e.bytes(0x0f, 0xb1)
	e.modrmMem(byte(src), base, disp)
}

// xchgMR emits "xchg [base+disp], src" (87 /r; locked implicitly).
func (e *enc) xchgMR(w bool, base reg, disp int32, src reg) {
	e.rex(w, src, 0, base, false)
	e.byte1(0x87)
	e.modrmMem(byte(src), base, disp)
}

// leaRM emits "lea dst, [base+disp]".
func (e *enc) leaRM(dst, base reg, disp int32) {
	e.rex(true, dst, 0, base, false)
	e.byte1(0x8d)
	e.modrmMem(byte(dst), base, disp)
}

// leaRIP emits "lea dst, [rip+rel32]" and returns the offset of rel32.
func (e *enc) leaRIP(dst reg) int32 {
	e.rex(true, dst, 0, 0, false)
	e.bytes(0x8d, 0x05|byte(dst&7)<<3)
	at := e.Len()
	e.u32(0)
	return at
}

// loadRMIndex8 emits "mov dst, [base+index*8]".
func (e *enc) loadRMIndex8(dst, base, index reg) {
	e.rex(true, dst, index, base, false)
	e.byte1(0x8b)
	if base&7 == 5 { // rbp/r13 base needs a displacement
		e.byte1(0x44 | byte(dst&7)<<3)
		e.byte1(0xc0 | byte(index&7)<<3 | byte(base&7))
		e.byte1(0)
		return
	}
	e.byte1(0x04 | byte(dst&7)<<3)
	e.byte1(0xc0 | byte(index&7)<<3 | byte(base&7))
}

func (e *enc) push(r reg) {
	e.rex(false, 0, 0, r, false)
	e.byte1(0x50 + byte(r&7))
}

func (e *enc) pop(r reg) {
	e.rex(false, 0, 0, r, false)
	e.byte1(0x58 + byte(r&7))
}

func (e *enc) ret() { e.byte1(0xc3) }

// cqo sign-extends rax into rdx:rax; cdq eax into edx:eax.
func (e *enc) cqo() { e.bytes(0x48, 0x99) }
func (e *enc) cdq() { e.byte1(0x99) }

// callR emits "call r" (FF /2).
func (e *enc) callR(r reg) {
	e.rex(false, 0, 0, r, false)
	e.byte1(0xff)
	e.modrmRR(extCall, r)
}

// callRel32 emits "call rel32" and returns the offset of rel32.
func (e *enc) callRel32() int32 {
	e.byte1(0xe8)
	at := e.Len()
	e.u32(0)
	return at
}

// jmpRel32 emits "jmp rel32" and returns the offset of rel32.
func (e *enc) jmpRel32() int32 {
	e.byte1(0xe9)
	at := e.Len()
	e.u32(0)
	return at
}

// jccRel32 emits "jcc rel32" (0F 80+cc) and returns the offset of rel32.
func (e *enc) jccRel32(cc byte) int32 {
	e.bytes(0x0f, 0x80|cc)
	at := e.Len()
	e.u32(0)
	return at
}

// jccRel8 emits "jcc rel8" (70+cc) and returns the offset of rel8.
func (e *enc) jccRel8(cc byte) int32 {
	e.bytes(0x70|cc, 0)
	return e.Len() - 1
}

// jmpRel8 emits "jmp rel8" (EB) and returns the offset of rel8.
func (e *enc) jmpRel8() int32 {
	e.bytes(0xeb, 0)
	return e.Len() - 1
}

// bindRel8 points the rel8 at "at" to the current offset.
func (e *enc) bindRel8(at int32) {
	d := e.Len() - (at + 1)
	if d > 127 || d < -128 {
		panic("BUG: jit/amd64: short jump out of range")
	}
	e.b[at] = byte(int8(d))
}

// bindRel32 points the rel32 at "at" to target (an offset in the code).
func (e *enc) bindRel32(at, target int32) { e.patch32(at, target-(at+4)) }

// jmpBack emits a jump to the already known offset target, short when it fits.
func (e *enc) jmpBack(cc byte, always bool, target int32) {
	d := target - (e.Len() + 2)
	if d >= -128 {
		if always {
			e.bytes(0xeb, byte(int8(d)))
		} else {
			e.bytes(0x70|cc, byte(int8(d)))
		}
		return
	}
	if always {
		at := e.jmpRel32()
		e.bindRel32(at, target)
		return
	}
	at := e.jccRel32(cc)
	e.bindRel32(at, target)
}

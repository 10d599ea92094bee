package arm64

// A64 instruction encodings, written from the Arm Architecture Reference
// Manual for A-profile (section C4, "A64 Instruction Set Encoding"). Each
// function returns one 32-bit instruction word; encoder_test.go checks them
// against golang.org/x/arch/arm64/arm64asm.

// reg is an AArch64 general-purpose register number. 31 is XZR or SP
// depending on the instruction (see each encoder).
type reg uint8

const (
	x0  reg = 0
	x1  reg = 1
	x2  reg = 2
	x3  reg = 3
	x4  reg = 4
	x7  reg = 7
	x9  reg = 9
	x10 reg = 10
	x11 reg = 11
	x12 reg = 12
	x16 reg = 16
	x17 reg = 17
	x19 reg = 19
	x20 reg = 20
	x21 reg = 21
	x22 reg = 22
	x23 reg = 23
	x24 reg = 24
	x29 reg = 29
	x30 reg = 30
	xzr reg = 31
	sp  reg = 31
)

// Condition codes (C1.2.4).
type cond uint8

const (
	condEQ cond = 0x0
	condNE cond = 0x1
	condHS cond = 0x2
	condLO cond = 0x3
	condHI cond = 0x8
	condLS cond = 0x9
	condGE cond = 0xa
	condLT cond = 0xb
	condGT cond = 0xc
	condLE cond = 0xd
	condAL cond = 0xe
)

// invert returns the opposite condition (flips bit 0).
func (c cond) invert() cond { return c ^ 1 }

func sf(w bool) uint32 {
	if w {
		return 1 << 31
	}
	return 0
}

// Data processing, register (C4.1.95): add/sub and logical, shifted register
// with shift amount 0.
const (
	opADD  uint32 = 0x0b000000
	opADDS uint32 = 0x2b000000
	opSUB  uint32 = 0x4b000000
	opSUBS uint32 = 0x6b000000
	opAND  uint32 = 0x0a000000
	opORR  uint32 = 0x2a000000
	opORN  uint32 = 0x2a200000
	opEOR  uint32 = 0x4a000000
	opANDS uint32 = 0x6a000000
)

// encRRR encodes op Rd, Rn, Rm (shifted-register add/sub/logical forms,
// LSL #0). Register 31 is XZR.
func encRRR(op uint32, w bool, rd, rn, rm reg) uint32 {
	return op | sf(w) | uint32(rm)<<16 | uint32(rn)<<5 | uint32(rd)
}

// Add/subtract (immediate) (C4.1.86).
const (
	opADDi  uint32 = 0x11000000
	opSUBi  uint32 = 0x51000000
	opSUBSi uint32 = 0x71000000
)

// encRRI12 encodes op Rd|SP, Rn|SP, #imm12 (imm in [0, 4096)).
func encRRI12(op uint32, w bool, rd, rn reg, imm uint32) uint32 {
	return op | sf(w) | (imm&0xfff)<<10 | uint32(rn)<<5 | uint32(rd)
}

// Move wide (immediate) (C4.1.86).
const (
	opMOVN uint32 = 0x12800000
	opMOVZ uint32 = 0x52800000
	opMOVK uint32 = 0x72800000
)

// encMovWide encodes MOVZ/MOVN/MOVK Rd, #imm16, LSL #(16*hw).
func encMovWide(op uint32, w bool, rd reg, imm16 uint16, hw uint) uint32 {
	return op | sf(w) | uint32(hw)<<21 | uint32(imm16)<<5 | uint32(rd)
}

// Data processing, 2 and 3 sources (C4.1.95).
const (
	opUDIV uint32 = 0x1ac00800
	opSDIV uint32 = 0x1ac00c00
	opLSLV uint32 = 0x1ac02000
	opLSRV uint32 = 0x1ac02400
	opASRV uint32 = 0x1ac02800
	opMADD uint32 = 0x1b000000
	opMSUB uint32 = 0x1b008000
)

// encR4 encodes MADD/MSUB Rd, Rn, Rm, Ra.
// encCSEL encodes CSEL rd, rn, rm, c (64-bit): rd = c ? rn : rm.
func encCSEL(rd, rn, rm reg, c cond) uint32 {
	return 0x9a800000 | uint32(rm)<<16 | uint32(c)<<12 | uint32(rn)<<5 | uint32(rd)
}

func encR4(op uint32, w bool, rd, rn, rm, ra reg) uint32 {
	return op | sf(w) | uint32(rm)<<16 | uint32(ra)<<10 | uint32(rn)<<5 | uint32(rd)
}

// Bitfield (C4.1.86).
const (
	opSBFM uint32 = 0x13000000
	opUBFM uint32 = 0x53000000
)

// encBitfield encodes SBFM/UBFM Rd, Rn, #immr, #imms (N = sf).
func encBitfield(op uint32, w bool, rd, rn reg, immr, imms uint32) uint32 {
	n := uint32(0)
	if w {
		n = 1 << 22
	}
	return op | sf(w) | n | (immr&0x3f)<<16 | (imms&0x3f)<<10 | uint32(rn)<<5 | uint32(rd)
}

// Data processing, 1 source: byte reversal.
const (
	opREV16w uint32 = 0x5ac00400
	opREVw   uint32 = 0x5ac00800
	opREVx   uint32 = 0xdac00c00
)

func encRR(op uint32, rd, rn reg) uint32 { return op | uint32(rn)<<5 | uint32(rd) }

// Load/store register opc values (bits 23:22).
const (
	ldstStore  = 0 // STRB/STRH/STR
	ldstLoad   = 1 // LDRB/LDRH/LDR (zero-extending)
	ldstLoadSX = 2 // LDRSB/LDRSH/LDRSW to a 64-bit register
)

// encLdStUimm encodes a load/store with an unsigned, size-scaled offset:
// [Rn|SP, #imm12 << size].
func encLdStUimm(size, opc uint32, rt, rn reg, imm12 uint32) uint32 {
	return size<<30 | 0x39000000 | opc<<22 | (imm12&0xfff)<<10 | uint32(rn)<<5 | uint32(rt)
}

// encLdStUnscaled encodes LDUR/STUR forms: [Rn|SP, #simm9].
func encLdStUnscaled(size, opc uint32, rt, rn reg, simm9 int32) uint32 {
	return size<<30 | 0x38000000 | opc<<22 | (uint32(simm9)&0x1ff)<<12 | uint32(rn)<<5 | uint32(rt)
}

// encLdStReg encodes [Rn|SP, Xm] (register offset, LSL #(size if scaled)).
func encLdStReg(size, opc uint32, rt, rn, rm reg, scaled bool) uint32 {
	s := uint32(0)
	if scaled {
		s = 1 << 12
	}
	return size<<30 | 0x38200800 | opc<<22 | uint32(rm)<<16 | 3<<13 | s | uint32(rn)<<5 | uint32(rt)
}

// encSTPpre encodes STP Xt1, Xt2, [SP, #off]! (off a multiple of 8).
func encSTPpre(rt1, rt2, rn reg, off int32) uint32 {
	return 0xa9800000 | (uint32(off/8)&0x7f)<<15 | uint32(rt2)<<10 | uint32(rn)<<5 | uint32(rt1)
}

// encLDPpost encodes LDP Xt1, Xt2, [SP], #off.
func encLDPpost(rt1, rt2, rn reg, off int32) uint32 {
	return 0xa8c00000 | (uint32(off/8)&0x7f)<<15 | uint32(rt2)<<10 | uint32(rn)<<5 | uint32(rt1)
}

// Branches (C4.1.65).
func encB(off int32) uint32             { return 0x14000000 | uint32(off/4)&0x3ffffff }
func encBL(off int32) uint32            { return 0x94000000 | uint32(off/4)&0x3ffffff }
func encBcond(c cond, off int32) uint32 { return 0x54000000 | (uint32(off/4)&0x7ffff)<<5 | uint32(c) }
func encCBZ(w bool, rt reg, off int32) uint32 {
	return 0x34000000 | sf(w) | (uint32(off/4)&0x7ffff)<<5 | uint32(rt)
}
func encCBNZ(w bool, rt reg, off int32) uint32 {
	return 0x35000000 | sf(w) | (uint32(off/4)&0x7ffff)<<5 | uint32(rt)
}
func encBLR(rn reg) uint32 { return 0xd63f0000 | uint32(rn)<<5 }

const (
	insRET    uint32 = 0xd65f03c0 // RET (x30)
	insDMBISH uint32 = 0xd5033bbf // DMB ISH
	insBRK    uint32 = 0xd4200000 // BRK #0 (padding)
)

// LSE atomic memory operations (C4.1.94, FEAT_LSE): LD<op>AL / SWPAL
// Rs, Rt, [Xn|SP], with acquire and release semantics.
const (
	lseADD = 0x0000 // o3=0 opc=000
	lseCLR = 0x1000 // opc=001
	lseEOR = 0x2000 // opc=010
	lseSET = 0x3000 // opc=011
	lseSWP = 0x8000 // o3=1 opc=000
)

// encLSE encodes LD<op>AL/SWPAL of 4 (w false) or 8 bytes.
func encLSE(op uint32, w bool, rs, rt, rn reg) uint32 {
	size := uint32(2)
	if w {
		size = 3
	}
	return size<<30 | 0x38e00000 | uint32(rs)<<16 | op | uint32(rn)<<5 | uint32(rt)
}

// encCASAL encodes CASAL Rs, Rt, [Xn|SP].
func encCASAL(w bool, rs, rt, rn reg) uint32 {
	size := uint32(2)
	if w {
		size = 3
	}
	return size<<30 | 0x08e0fc00 | uint32(rs)<<16 | uint32(rn)<<5 | uint32(rt)
}

// encLDAXR encodes LDAXR Rt, [Xn|SP].
func encLDAXR(w bool, rt, rn reg) uint32 {
	size := uint32(2)
	if w {
		size = 3
	}
	return size<<30 | 0x085ffc00 | uint32(rn)<<5 | uint32(rt)
}

// encSTLXR encodes STLXR Ws, Rt, [Xn|SP].
func encSTLXR(w bool, ws, rt, rn reg) uint32 {
	size := uint32(2)
	if w {
		size = 3
	}
	return size<<30 | 0x0800fc00 | uint32(ws)<<16 | uint32(rn)<<5 | uint32(rt)
}

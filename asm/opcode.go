package asm

import "fmt"

// OpCode is the 8-bit opcode of an instruction.
//
// Its low three bits are the instruction class:
//
//	  7 6 5 4 3 2 1 0
//	+---------+-+-----+
//	|   op    |S|class|   ALU, ALU64, JMP, JMP32  (S: source, K=0 / X=1)
//	+---------+-+-----+
//	+-----+---+-------+
//	|mode |sz | class |   LD, LDX, ST, STX
//	+-----+---+-------+
type OpCode uint8

// Class is the instruction class, the low 3 bits of an OpCode.
type Class uint8

// Instruction classes.
const (
	ClassLD    Class = 0x00
	ClassLDX   Class = 0x01
	ClassST    Class = 0x02
	ClassSTX   Class = 0x03
	ClassALU   Class = 0x04
	ClassJMP   Class = 0x05
	ClassJMP32 Class = 0x06
	ClassALU64 Class = 0x07
)

// Source selects the second operand of ALU and jump instructions.
type Source uint8

// Operand sources.
const (
	SourceK Source = 0x00 // the 32-bit immediate, sign-extended
	SourceX Source = 0x08 // the source register
)

// ALUOp is the operation of an ALU or ALU64 instruction (bits 4-7).
type ALUOp uint8

// ALU operations.
const (
	ALUAdd  ALUOp = 0x00
	ALUSub  ALUOp = 0x10
	ALUMul  ALUOp = 0x20
	ALUDiv  ALUOp = 0x30 // Off=1: signed division (v4)
	ALUOr   ALUOp = 0x40
	ALUAnd  ALUOp = 0x50
	ALULsh  ALUOp = 0x60
	ALURsh  ALUOp = 0x70
	ALUNeg  ALUOp = 0x80
	ALUMod  ALUOp = 0x90 // Off=1: signed modulo (v4)
	ALUXor  ALUOp = 0xa0
	ALUMov  ALUOp = 0xb0 // Off=8,16,32: sign-extending move (v4)
	ALUArsh ALUOp = 0xc0
	ALUEnd  ALUOp = 0xd0 // byte swap; Imm is the width 16, 32 or 64
)

// JumpOp is the operation of a JMP or JMP32 instruction (bits 4-7).
type JumpOp uint8

// Jump operations.
const (
	JumpA    JumpOp = 0x00 // JMP: Off is the offset; JMP32: Imm is (v4 "gotol")
	JumpEq   JumpOp = 0x10
	JumpGT   JumpOp = 0x20
	JumpGE   JumpOp = 0x30
	JumpSet  JumpOp = 0x40
	JumpNE   JumpOp = 0x50
	JumpSGT  JumpOp = 0x60
	JumpSGE  JumpOp = 0x70
	JumpCall JumpOp = 0x80
	JumpExit JumpOp = 0x90
	JumpLT   JumpOp = 0xa0
	JumpLE   JumpOp = 0xb0
	JumpSLT  JumpOp = 0xc0
	JumpSLE  JumpOp = 0xd0
)

// Mode is the addressing mode of a load or store (bits 5-7).
type Mode uint8

// Addressing modes.
const (
	ModeIMM    Mode = 0x00 // LD only: the 64-bit immediate load (with SizeDW)
	ModeABS    Mode = 0x20 // legacy packet access, not supported
	ModeIND    Mode = 0x40 // legacy packet access, not supported
	ModeMEM    Mode = 0x60
	ModeMEMSX  Mode = 0x80 // LDX only: sign-extending load (v4)
	ModeAtomic Mode = 0xc0 // STX only, sizes W and DW
)

// Size is the access width of a load or store (bits 3-4).
type Size uint8

// Access widths.
const (
	SizeW  Size = 0x00
	SizeH  Size = 0x08
	SizeB  Size = 0x10
	SizeDW Size = 0x18
)

// Bytes returns the width of s in bytes.
func (s Size) Bytes() int {
	switch s {
	case SizeB:
		return 1
	case SizeH:
		return 2
	case SizeW:
		return 4
	default:
		return 8
	}
}

// Atomic operations, carried in the Imm of an STX|ATOMIC instruction.
const (
	AtomicAdd     int32 = 0x00
	AtomicOr      int32 = 0x40
	AtomicAnd     int32 = 0x50
	AtomicXor     int32 = 0xa0
	AtomicFetch   int32 = 0x01 // flag: the old value is returned in Src
	AtomicXchg    int32 = 0xe0 | AtomicFetch
	AtomicCmpXchg int32 = 0xf0 | AtomicFetch
)

// Pseudo sources of LD_IMM64 and CALL, as clang and libbpf use them.
const (
	PseudoMapFD    Register = 1 // LD_IMM64: Imm is a map index; loads the map handle
	PseudoMapValue Register = 2 // LD_IMM64: Imm is a map index, next Imm an offset into value 0
	PseudoCall     Register = 1 // CALL: Imm is a pc-relative offset to a subprogram
	PseudoHelper   Register = 0 // CALL: Imm is a helper id
)

// Class returns the class of op.
func (op OpCode) Class() Class { return Class(op & 0x07) }

// Source returns the operand source of an ALU or jump opcode.
func (op OpCode) Source() Source { return Source(op & 0x08) }

// ALUOp returns the operation of an ALU or ALU64 opcode.
func (op OpCode) ALUOp() ALUOp { return ALUOp(op & 0xf0) }

// JumpOp returns the operation of a JMP or JMP32 opcode.
func (op OpCode) JumpOp() JumpOp { return JumpOp(op & 0xf0) }

// Mode returns the addressing mode of a load or store opcode.
func (op OpCode) Mode() Mode { return Mode(op & 0xe0) }

// Size returns the access width of a load or store opcode.
func (op OpCode) Size() Size { return Size(op & 0x18) }

// IsALU reports whether op is an ALU or ALU64 instruction.
func (c Class) IsALU() bool { return c == ClassALU || c == ClassALU64 }

// IsJump reports whether op is a JMP or JMP32 instruction.
func (c Class) IsJump() bool { return c == ClassJMP || c == ClassJMP32 }

// IsLoadStore reports whether c is one of LD, LDX, ST, STX.
func (c Class) IsLoadStore() bool { return c <= ClassSTX }

// ALUOpCode builds an ALU opcode.
func ALUOpCode(c Class, op ALUOp, s Source) OpCode { return OpCode(uint8(c) | uint8(op) | uint8(s)) }

// JumpOpCode builds a jump opcode.
func JumpOpCode(c Class, op JumpOp, s Source) OpCode { return OpCode(uint8(c) | uint8(op) | uint8(s)) }

// MemOpCode builds a load or store opcode.
func MemOpCode(c Class, m Mode, s Size) OpCode { return OpCode(uint8(c) | uint8(m) | uint8(s)) }

// Frequently used opcodes.
const (
	OpLdImm64 = OpCode(uint8(ClassLD) | uint8(ModeIMM) | uint8(SizeDW)) // 0x18
	OpCall    = OpCode(uint8(ClassJMP) | uint8(JumpCall))               // 0x85
	OpCallX   = OpCode(uint8(ClassJMP) | uint8(JumpCall) | uint8(SourceX))
	OpExit    = OpCode(uint8(ClassJMP) | uint8(JumpExit)) // 0x95
	OpJa      = OpCode(uint8(ClassJMP) | uint8(JumpA))    // 0x05
	OpJa32    = OpCode(uint8(ClassJMP32) | uint8(JumpA))  // 0x06, "gotol"
)

func (c Class) String() string {
	switch c {
	case ClassLD:
		return "ld"
	case ClassLDX:
		return "ldx"
	case ClassST:
		return "st"
	case ClassSTX:
		return "stx"
	case ClassALU:
		return "alu32"
	case ClassJMP:
		return "jmp"
	case ClassJMP32:
		return "jmp32"
	case ClassALU64:
		return "alu64"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

package asm

import (
	"encoding/binary"
	"fmt"
)

// InstructionSize is the size in bytes of one instruction slot.
const InstructionSize = 8

// Instruction is one 64-bit instruction slot:
//
//	 0       8    12   16              32                              64
//	+--------+----+----+---------------+-------------------------------+
//	| opcode |dst |src |    offset     |          immediate            |
//	+--------+----+----+---------------+-------------------------------+
//
// (little-endian: dst is the low nibble of byte 1).
type Instruction struct {
	Op  OpCode
	Dst Register
	Src Register
	Off int16
	Imm int32
}

// IsLdImm64 reports whether ins is the first slot of a 16-byte LD_IMM64.
func (ins Instruction) IsLdImm64() bool { return ins.Op == OpLdImm64 }

// Decode decodes little-endian instruction bytes into slots. The length of b
// must be a multiple of InstructionSize.
func Decode(b []byte) ([]Instruction, error) {
	if len(b)%InstructionSize != 0 {
		return nil, fmt.Errorf("decode: %d bytes is not a multiple of %d", len(b), InstructionSize)
	}
	insns := make([]Instruction, len(b)/InstructionSize)
	for i := range insns {
		insns[i] = DecodeOne(binary.LittleEndian.Uint64(b[i*InstructionSize:]))
	}
	return insns, nil
}

// DecodeOne decodes one little-endian instruction word.
func DecodeOne(w uint64) Instruction {
	return Instruction{
		Op:  OpCode(w),
		Dst: Register((w >> 8) & 0x0f),
		Src: Register((w >> 12) & 0x0f),
		Off: int16(w >> 16),
		Imm: int32(w >> 32),
	}
}

// Word returns the little-endian instruction word of ins.
func (ins Instruction) Word() uint64 {
	return uint64(ins.Op) | uint64(ins.Dst&0x0f)<<8 | uint64(ins.Src&0x0f)<<12 |
		uint64(uint16(ins.Off))<<16 | uint64(uint32(ins.Imm))<<32
}

// Encode returns the little-endian bytes of insns.
func Encode(insns []Instruction) []byte {
	b := make([]byte, len(insns)*InstructionSize)
	for i, ins := range insns {
		binary.LittleEndian.PutUint64(b[i*InstructionSize:], ins.Word())
	}
	return b
}

// Imm64 returns the 64-bit immediate of the LD_IMM64 starting at pc.
// It returns false if pc is not such an instruction or its second slot is
// missing.
func Imm64(insns []Instruction, pc int) (uint64, bool) {
	if pc < 0 || pc+1 >= len(insns) || !insns[pc].IsLdImm64() {
		return 0, false
	}
	return uint64(uint32(insns[pc].Imm)) | uint64(uint32(insns[pc+1].Imm))<<32, true
}

// LdImm64 returns the two slots of an LD_IMM64 of v into dst.
func LdImm64(dst Register, v uint64) [2]Instruction {
	return [2]Instruction{
		{Op: OpLdImm64, Dst: dst, Imm: int32(uint32(v))},
		{Imm: int32(uint32(v >> 32))},
	}
}

package vm

import (
	"math/bits"

	"github.com/ncclbpf/ncclbpf/asm"
)

// alu64 computes the ALU64 operation of in on d (dst) and s (src or the
// sign-extended imm). RFC 9669: division by zero gives 0, modulo by zero
// leaves dst unchanged, signed division of the most negative value by -1
// wraps (Go defines x / -1 == x and x % -1 == 0 for it, without a panic),
// shift amounts are masked to 63.
func alu64(in *insn, d, s uint64) uint64 {
	switch in.op.ALUOp() {
	case asm.ALUAdd:
		return d + s
	case asm.ALUSub:
		return d - s
	case asm.ALUMul:
		return d * s
	case asm.ALUDiv:
		if s == 0 {
			return 0
		}
		if in.off == 1 {
			return uint64(int64(d) / int64(s))
		}
		return d / s
	case asm.ALUMod:
		if s == 0 {
			return d
		}
		if in.off == 1 {
			return uint64(int64(d) % int64(s))
		}
		return d % s
	case asm.ALUOr:
		return d | s
	case asm.ALUAnd:
		return d & s
	case asm.ALULsh:
		return d << (s & 63)
	case asm.ALURsh:
		return d >> (s & 63)
	case asm.ALUArsh:
		return uint64(int64(d) >> (s & 63))
	case asm.ALUNeg:
		return -d
	case asm.ALUXor:
		return d ^ s
	case asm.ALUMov:
		switch in.off {
		case 8:
			return uint64(int64(int8(s)))
		case 16:
			return uint64(int64(int16(s)))
		case 32:
			return uint64(int64(int32(s)))
		}
		return s
	default: // ALUEnd in class ALU64: unconditional byte swap (v4 bswap)
		switch in.imm {
		case 16:
			return uint64(bits.ReverseBytes16(uint16(d)))
		case 32:
			return uint64(bits.ReverseBytes32(uint32(d)))
		}
		return bits.ReverseBytes64(d)
	}
}

// alu32 computes the ALU (32-bit) operation of in on the low halves of d
// and s; the result is zero-extended to 64 bits, except for END to-le/to-be
// of width 64, which is a 64-bit operation encoded in class ALU.
func alu32(in *insn, d64, s64 uint64) uint64 {
	d, s := uint32(d64), uint32(s64)
	var r uint32
	switch in.op.ALUOp() {
	case asm.ALUAdd:
		r = d + s
	case asm.ALUSub:
		r = d - s
	case asm.ALUMul:
		r = d * s
	case asm.ALUDiv:
		switch {
		case s == 0:
			r = 0
		case in.off == 1:
			r = uint32(int32(d) / int32(s))
		default:
			r = d / s
		}
	case asm.ALUMod:
		switch {
		case s == 0:
			r = d
		case in.off == 1:
			r = uint32(int32(d) % int32(s))
		default:
			r = d % s
		}
	case asm.ALUOr:
		r = d | s
	case asm.ALUAnd:
		r = d & s
	case asm.ALULsh:
		r = d << (s & 31)
	case asm.ALURsh:
		r = d >> (s & 31)
	case asm.ALUArsh:
		r = uint32(int32(d) >> (s & 31))
	case asm.ALUNeg:
		r = -d
	case asm.ALUXor:
		r = d ^ s
	case asm.ALUMov:
		switch in.off {
		case 8:
			r = uint32(int32(int8(s)))
		case 16:
			r = uint32(int32(int16(s)))
		default:
			r = s
		}
	default: // ALUEnd: source K converts to little endian, X to big endian
		return endian(in, d64)
	}
	return uint64(r)
}

// endian implements le16/32/64 and be16/32/64 on a little-endian host:
// to-le truncates to the width (zero-extending), to-be swaps the bytes of
// the low width bits.
func endian(in *insn, d uint64) uint64 {
	toBE := in.op.Source() == asm.SourceX
	switch in.imm {
	case 16:
		if toBE {
			return uint64(bits.ReverseBytes16(uint16(d)))
		}
		return uint64(uint16(d))
	case 32:
		if toBE {
			return uint64(bits.ReverseBytes32(uint32(d)))
		}
		return uint64(uint32(d))
	}
	if toBE {
		return bits.ReverseBytes64(d)
	}
	return d
}

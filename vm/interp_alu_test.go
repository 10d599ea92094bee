package vm

import (
	"math"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

// binop returns a program computing r0 = a OP b with b in r1.
func binop(a, b uint64, op ins) []ins {
	op.Dst, op.Src = r0, r1
	return prog(ld64(r0, a), ld64(r1, b), op, exit())
}

// unop returns a program applying op (an immediate form) to r0 = a.
func unop(a uint64, op ins) []ins {
	op.Dst = r0
	return prog(ld64(r0, a), op, exit())
}

const (
	intMin64 = uint64(1) << 63
	upper    = uint64(0xdeadbeef) << 32 // garbage in the upper half of 32-bit operands
)

func neg64(v int64) uint64 { return uint64(v) }

func TestALU(t *testing.T) {
	sdiv64 := withOff(a64x(asm.ALUDiv, 0, 0), 1)
	smod64 := withOff(a64x(asm.ALUMod, 0, 0), 1)
	sdiv32 := withOff(a32x(asm.ALUDiv, 0, 0), 1)
	smod32 := withOff(a32x(asm.ALUMod, 0, 0), 1)
	cases := []runCase{
		// add, sub, mul: wrap around; 32-bit results are zero-extended.
		{name: "add64 wraps", insns: binop(math.MaxUint64, 2, a64x(asm.ALUAdd, 0, 0)), want: 1},
		{name: "add32 wraps and zero-extends", insns: binop(upper|0xffffffff, 1, a32x(asm.ALUAdd, 0, 0)), want: 0},
		{name: "add32 imm zero-extends", insns: unop(upper|1, a32k(asm.ALUAdd, 0, 1)), want: 2},
		{name: "add64 imm sign-extends", insns: unop(0, a64k(asm.ALUAdd, 0, -1)), want: math.MaxUint64},
		{name: "sub64 wraps", insns: binop(0, 1, a64x(asm.ALUSub, 0, 0)), want: math.MaxUint64},
		{name: "sub32 wraps", insns: binop(upper, 1, a32x(asm.ALUSub, 0, 0)), want: 0xffffffff},
		{name: "mul32 overflow", insns: binop(0x10000, 0x10001, a32x(asm.ALUMul, 0, 0)), want: 0x10000},
		{name: "mul64 intmin by -1", insns: binop(intMin64, neg64(-1), a64x(asm.ALUMul, 0, 0)), want: intMin64},
		{name: "mul32 intmin by -1 imm", insns: unop(0x80000000, a32k(asm.ALUMul, 0, -1)), want: 0x80000000},
		// Unsigned division and modulo.
		{name: "div64", insns: binop(100, 7, a64x(asm.ALUDiv, 0, 0)), want: 14},
		{name: "div64 by zero reg", insns: binop(100, 0, a64x(asm.ALUDiv, 0, 0)), want: 0},
		{name: "div64 by zero imm", insns: unop(100, a64k(asm.ALUDiv, 0, 0)), want: 0},
		{name: "div32 by zero reg", insns: binop(upper|100, upper, a32x(asm.ALUDiv, 0, 0)), want: 0},
		{name: "div32 high divisor bits ignored", insns: binop(upper|100, 1<<32|7, a32x(asm.ALUDiv, 0, 0)), want: 14},
		{name: "div64 negative imm is unsigned", insns: unop(100, a64k(asm.ALUDiv, 0, -3)), want: 0},
		{name: "div32 negative imm is unsigned", insns: unop(0xfffffffe, a32k(asm.ALUDiv, 0, -1)), want: 0},
		{name: "mod64", insns: binop(100, 7, a64x(asm.ALUMod, 0, 0)), want: 2},
		{name: "mod64 by zero keeps dividend", insns: binop(upper|100, 0, a64x(asm.ALUMod, 0, 0)), want: upper | 100},
		{name: "mod64 by zero imm keeps dividend", insns: unop(upper|100, a64k(asm.ALUMod, 0, 0)), want: upper | 100},
		{name: "mod32 by zero zero-extends dividend", insns: binop(upper|100, upper, a32x(asm.ALUMod, 0, 0)), want: 100},
		{name: "mod32", insns: binop(upper|100, 7, a32x(asm.ALUMod, 0, 0)), want: 2},
		// Signed division and modulo (Off=1).
		{name: "sdiv64", insns: binop(neg64(-7), 2, sdiv64), want: neg64(-3)},
		{name: "sdiv64 by negative", insns: binop(7, neg64(-2), sdiv64), want: neg64(-3)},
		{name: "sdiv64 intmin by -1 wraps", insns: binop(intMin64, neg64(-1), sdiv64), want: intMin64},
		{name: "sdiv64 intmin by -1 imm", insns: unop(intMin64, withOff(a64k(asm.ALUDiv, 0, -1), 1)), want: intMin64},
		{name: "sdiv64 by zero", insns: binop(neg64(-7), 0, sdiv64), want: 0},
		{name: "sdiv32", insns: binop(upper|0xfffffff9, 2, sdiv32), want: 0xfffffffd},
		{name: "sdiv32 intmin by -1 wraps", insns: binop(0x80000000, 0xffffffff, sdiv32), want: 0x80000000},
		{name: "sdiv32 intmin by -1 imm", insns: unop(upper|0x80000000, withOff(a32k(asm.ALUDiv, 0, -1), 1)), want: 0x80000000},
		{name: "sdiv32 by zero", insns: binop(upper|7, upper, sdiv32), want: 0},
		{name: "smod64 neg by pos", insns: binop(neg64(-7), 2, smod64), want: neg64(-1)},
		{name: "smod64 pos by neg", insns: binop(7, neg64(-2), smod64), want: 1},
		{name: "smod64 neg by neg", insns: binop(neg64(-7), neg64(-2), smod64), want: neg64(-1)},
		{name: "smod64 intmin by -1", insns: binop(intMin64, neg64(-1), smod64), want: 0},
		{name: "smod64 by zero keeps dividend", insns: binop(neg64(-7), 0, smod64), want: neg64(-7)},
		{name: "smod32 neg by pos", insns: binop(0xfffffff9, 2, smod32), want: 0xffffffff},
		{name: "smod32 intmin by -1", insns: binop(0x80000000, 0xffffffff, smod32), want: 0},
		{name: "smod32 by zero zero-extends", insns: binop(upper|0xfffffff9, 0, smod32), want: 0xfffffff9},
		{name: "smod32 imm by zero", insns: unop(upper|5, withOff(a32k(asm.ALUMod, 0, 0), 1)), want: 5},
		// Bitwise.
		{name: "or32 zero-extends", insns: binop(upper|1, 2, a32x(asm.ALUOr, 0, 0)), want: 3},
		{name: "and64 imm sign-extends", insns: unop(upper|0xff, a64k(asm.ALUAnd, 0, -2)), want: upper | 0xfe},
		{name: "xor32", insns: binop(upper|0xff, 0x0f, a32x(asm.ALUXor, 0, 0)), want: 0xf0},
		// Shifts: amounts are masked to 63 / 31.
		{name: "lsh64 by 64 is by 0", insns: binop(3, 64, a64x(asm.ALULsh, 0, 0)), want: 3},
		{name: "lsh64 by 65 is by 1", insns: binop(3, 65, a64x(asm.ALULsh, 0, 0)), want: 6},
		{name: "lsh64 imm 63", insns: unop(3, a64k(asm.ALULsh, 0, 63)), want: intMin64},
		{name: "lsh32 by 32 is by 0", insns: binop(upper|3, 32, a32x(asm.ALULsh, 0, 0)), want: 3},
		{name: "lsh32 drops bits above 32", insns: unop(0x80000001, a32k(asm.ALULsh, 0, 1)), want: 2},
		{name: "rsh64 by 65", insns: binop(8, 65, a64x(asm.ALURsh, 0, 0)), want: 4},
		{name: "rsh32 ignores upper half", insns: unop(upper|8, a32k(asm.ALURsh, 0, 1)), want: 4},
		{name: "rsh32 by 33 is by 1", insns: binop(8, 33, a32x(asm.ALURsh, 0, 0)), want: 4},
		{name: "rsh32 negative amount masked", insns: unop(0x80000000, a32k(asm.ALURsh, 0, -1)), want: 1},
		{name: "arsh64", insns: unop(intMin64, a64k(asm.ALUArsh, 0, 63)), want: math.MaxUint64},
		{name: "arsh64 by 64 is by 0", insns: binop(intMin64, 64, a64x(asm.ALUArsh, 0, 0)), want: intMin64},
		{name: "arsh32 sign is bit 31", insns: unop(0x80000000, a32k(asm.ALUArsh, 0, 31)), want: 0xffffffff},
		{name: "arsh32 ignores upper half", insns: unop(1<<32|0x80000000, a32k(asm.ALUArsh, 0, 4)), want: 0xf8000000},
		{name: "arsh32 positive", insns: unop(upper|0x40000000, a32k(asm.ALUArsh, 0, 30)), want: 1},
		// Negation.
		{name: "neg64", insns: unop(5, a64k(asm.ALUNeg, 0, 0)), want: neg64(-5)},
		{name: "neg64 intmin", insns: unop(intMin64, a64k(asm.ALUNeg, 0, 0)), want: intMin64},
		{name: "neg32 intmin", insns: unop(0xffffffff80000000, a32k(asm.ALUNeg, 0, 0)), want: 0x80000000},
		{name: "neg32 zero-extends", insns: unop(upper|1, a32k(asm.ALUNeg, 0, 0)), want: 0xffffffff},
		// Moves and sign-extending moves.
		{name: "mov64 imm sign-extends", insns: unop(0, a64k(asm.ALUMov, 0, -1)), want: math.MaxUint64},
		{name: "mov32 imm zero-extends", insns: unop(upper, a32k(asm.ALUMov, 0, -1)), want: 0xffffffff},
		{name: "mov32 reg zero-extends", insns: binop(0, upper|5, a32x(asm.ALUMov, 0, 0)), want: 5},
		{name: "movsx64 8", insns: binop(0, upper|0x180, withOff(a64x(asm.ALUMov, 0, 0), 8)), want: 0xffffffffffffff80},
		{name: "movsx64 8 positive", insns: binop(0, upper|0x17f, withOff(a64x(asm.ALUMov, 0, 0), 8)), want: 0x7f},
		{name: "movsx64 16", insns: binop(0, upper|0x18000, withOff(a64x(asm.ALUMov, 0, 0), 16)), want: 0xffffffffffff8000},
		{name: "movsx64 32", insns: binop(0, 1<<32|0x80000000, withOff(a64x(asm.ALUMov, 0, 0), 32)), want: 0xffffffff80000000},
		{name: "movsx64 32 positive", insns: binop(0, upper|0x7fffffff, withOff(a64x(asm.ALUMov, 0, 0), 32)), want: 0x7fffffff},
		{name: "movsx32 8 zero-extends", insns: binop(upper, 0x80, withOff(a32x(asm.ALUMov, 0, 0), 8)), want: 0xffffff80},
		{name: "movsx32 16 zero-extends", insns: binop(upper, upper|0x8001, withOff(a32x(asm.ALUMov, 0, 0), 16)), want: 0xffff8001},
	}
	runTable(t, cases, Program{})
}

func TestByteSwap(t *testing.T) {
	const v = 0x1122334455667788
	le, be := asm.SourceK, asm.SourceX
	cases := []runCase{
		{name: "le16 truncates", insns: unop(v, byteswap(asm.ClassALU, le, 0, 16)), want: 0x7788},
		{name: "le32 truncates", insns: unop(v, byteswap(asm.ClassALU, le, 0, 32)), want: 0x55667788},
		{name: "le64 is a no-op", insns: unop(v, byteswap(asm.ClassALU, le, 0, 64)), want: v},
		{name: "be16", insns: unop(v, byteswap(asm.ClassALU, be, 0, 16)), want: 0x8877},
		{name: "be32", insns: unop(v, byteswap(asm.ClassALU, be, 0, 32)), want: 0x88776655},
		{name: "be64", insns: unop(v, byteswap(asm.ClassALU, be, 0, 64)), want: 0x8877665544332211},
		{name: "bswap16", insns: unop(v, byteswap(asm.ClassALU64, le, 0, 16)), want: 0x8877},
		{name: "bswap32", insns: unop(v, byteswap(asm.ClassALU64, le, 0, 32)), want: 0x88776655},
		{name: "bswap64", insns: unop(v, byteswap(asm.ClassALU64, le, 0, 64)), want: 0x8877665544332211},
	}
	runTable(t, cases, Program{})
}

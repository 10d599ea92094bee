package vm

import (
	"fmt"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

// branch returns a program that returns 1 if the jump j (on r1 = a and
// r2 = b or an immediate) is taken, else 0.
func branch(a, b uint64, j ins) []ins {
	j.Dst = r1
	if j.Op.Source() == asm.SourceX {
		j.Src = r2
	}
	j.Off = 2
	return prog(ld64(r1, a), ld64(r2, b), j, mov(r0, 0), exit(), mov(r0, 1), exit())
}

func TestJumpConditions(t *testing.T) {
	type cond struct {
		op     asm.JumpOp
		a, b   uint64
		taken  bool
		only32 bool // the case is about the low halves: only JMP32
		only64 bool
	}
	const (
		min64 = uint64(1) << 63
		max64 = min64 - 1
		m1    = ^uint64(0)
	)
	conds := []cond{
		{op: asm.JumpEq, a: 5, b: 5, taken: true},
		{op: asm.JumpEq, a: 5, b: 6},
		{op: asm.JumpEq, a: 1<<32 | 5, b: 5, taken: true, only32: true},
		{op: asm.JumpEq, a: 1<<32 | 5, b: 5, only64: true},
		{op: asm.JumpNE, a: 5, b: 6, taken: true},
		{op: asm.JumpNE, a: 5, b: 5},
		{op: asm.JumpGT, a: m1, b: 0, taken: true},
		{op: asm.JumpGT, a: 0, b: m1},
		{op: asm.JumpGT, a: 7, b: 7},
		{op: asm.JumpGE, a: 7, b: 7, taken: true},
		{op: asm.JumpGE, a: 6, b: 7},
		{op: asm.JumpLT, a: 0, b: m1, taken: true},
		{op: asm.JumpLT, a: 7, b: 7},
		{op: asm.JumpLE, a: 7, b: 7, taken: true},
		{op: asm.JumpLE, a: 8, b: 7},
		{op: asm.JumpSet, a: 0x10, b: 0x30, taken: true},
		{op: asm.JumpSet, a: 0x10, b: 0x20},
		{op: asm.JumpSet, a: 1 << 40, b: 1 << 40, taken: true, only64: true},
		{op: asm.JumpSet, a: 1 << 40, b: 1 << 40, only32: true},
		{op: asm.JumpSGT, a: 0, b: m1, taken: true},
		{op: asm.JumpSGT, a: m1, b: 0},
		{op: asm.JumpSGT, a: max64, b: min64, taken: true, only64: true},
		{op: asm.JumpSGT, a: 0x7fffffff, b: 0x80000000, taken: true, only32: true},
		{op: asm.JumpSGT, a: 0x7fffffff, b: 0x80000000, only64: true},
		{op: asm.JumpSGE, a: m1, b: m1, taken: true},
		{op: asm.JumpSGE, a: min64, b: max64, only64: true},
		{op: asm.JumpSLT, a: m1, b: 0, taken: true},
		{op: asm.JumpSLT, a: 0, b: 0},
		{op: asm.JumpSLT, a: 0x80000000, b: 0, taken: true, only32: true},
		{op: asm.JumpSLT, a: 0x80000000, b: 0, only64: true},
		{op: asm.JumpSLE, a: min64, b: min64, taken: true},
		{op: asm.JumpSLE, a: 1, b: 0},
	}
	var cases []runCase
	for _, c := range conds {
		for _, class := range []asm.Class{asm.ClassJMP, asm.ClassJMP32} {
			if (c.only32 && class == asm.ClassJMP) || (c.only64 && class == asm.ClassJMP32) {
				continue
			}
			want := uint64(0)
			if c.taken {
				want = 1
			}
			name := fmt.Sprintf("%v op %#x %#x,%#x", class, uint8(c.op), c.a, c.b)
			cases = append(cases, runCase{name: name + " reg", insns: branch(c.a, c.b, jx(class, c.op, 0, 0, 0)), want: want})
			// The immediate form, when b is representable as a
			// sign-extended (JMP) or plain (JMP32) 32-bit immediate.
			if imm := int32(c.b); (class == asm.ClassJMP && uint64(int64(imm)) == c.b) || (class == asm.ClassJMP32 && uint64(uint32(imm)) == c.b&0xffffffff) {
				cases = append(cases, runCase{name: name + " imm", insns: branch(c.a, 0, jk(class, c.op, 0, imm, 0)), want: want})
			}
		}
	}
	// Immediates are sign-extended before unsigned 64-bit comparisons.
	cases = append(cases,
		runCase{name: "jeq imm sign-extended", insns: branch(0xffffffff80000000, 0, jk(asm.ClassJMP, asm.JumpEq, 0, -0x80000000, 0)), want: 1},
		runCase{name: "jgt imm sign-extended", insns: branch(0x80000000, 0, jk(asm.ClassJMP, asm.JumpLT, 0, -1, 0)), want: 1},
		runCase{name: "jeq32 imm", insns: branch(0x1ffffffff, 0, jk(asm.ClassJMP32, asm.JumpEq, 0, -1, 0)), want: 1},
	)
	runTable(t, cases, Program{})
}

func TestUnconditionalJumps(t *testing.T) {
	cases := []runCase{
		{name: "ja forward", insns: prog(mov(r0, 1), ja(1), mov(r0, 2), exit()), want: 1},
		{name: "ja backward loop", insns: prog(mov(r0, 0), mov(r1, 10), a64k(asm.ALUAdd, r0, 3), a64k(asm.ALUSub, r1, 1),
			jk(asm.ClassJMP, asm.JumpNE, r1, 0, -3), exit()), want: 30},
		{name: "ja 0 is a no-op", insns: prog(mov(r0, 4), ja(0), exit()), want: 4},
		{name: "gotol forward", insns: prog(mov(r0, 1), ja32(1), mov(r0, 2), exit()), want: 1},
		{name: "gotol backward", insns: prog(mov(r0, 0), ja32(2), mov(r0, 7), exit(), ja32(-3)), want: 7},
		{name: "jump over LD_IMM64", insns: prog(mov(r0, 1), ja(2), ld64(r0, 9), exit()), want: 1},
		{name: "exit not last", insns: prog(mov(r0, 3), exit(), mov(r0, 4), exit()), want: 3},
	}
	runTable(t, cases, Program{})
}

package jittest

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Branch shapes a backend may lower without branching or comparing: a
// conditional jump over one ALU instruction (a select: cmov, csel),
// jeq/jne against 0 right after an ALU instruction on the same register
// (whose flags may be reused), and loops whose head tests for the exit
// (the back edge may repeat the test). Every jump form meets every ALU form,
// selectable or not, on operands chosen to hit the 32-bit boundaries, in
// several register assignments (the registers x86-64 uses implicitly
// included), each run on the interpreter and the JIT.

// shapeOperands are the 64-bit values the programs load as their operands.
var shapeOperands = [][3]uint64{
	{1, 2, 3},
	{5, 5, 0xffffffff},
	{0xffffffff00000000, 0, 7},
	{0x100000001, 1, 0x80000000},
	{0xffffffffffffffff, 0x7fffffffffffffff, 0xfffffffffffffffe},
	{0x80000000, 0x7fffffff, 0},
	{0, 0xffffffff, 0x100000000},
}

// shapeImms are the immediates of the K forms, used in turn.
var shapeImms = []int32{0, 1, -1, 31, 0x7fffffff, -0x80000000, 5, 0x3f}

// shapeRegs are register assignments: the jump compares a with b, the ALU
// instruction writes d from s.
var shapeRegs = []struct{ a, b, d, s asm.Register }{
	{asm.R2, asm.R3, asm.R4, asm.R3},
	{asm.R0, asm.R5, asm.R0, asm.R5},
	{asm.R3, asm.R4, asm.R3, asm.R3},
	{asm.R9, asm.R0, asm.R6, asm.R9},
	{asm.R5, asm.R1, asm.R1, asm.R5},
}

// shapeALUs are ALU forms: every selectable one and some that are not.
func shapeALUs() []asm.Instruction {
	var out []asm.Instruction
	for _, c := range []asm.Class{asm.ClassALU64, asm.ClassALU} {
		for _, op := range []asm.ALUOp{asm.ALUAdd, asm.ALUSub, asm.ALUOr, asm.ALUAnd, asm.ALUXor, asm.ALUMul, asm.ALUMov, asm.ALULsh, asm.ALURsh, asm.ALUArsh, asm.ALUDiv, asm.ALUMod} {
			for _, s := range []asm.Source{asm.SourceK, asm.SourceX} {
				out = append(out, asm.Instruction{Op: asm.ALUOpCode(c, op, s)})
			}
		}
		end := asm.SourceX // ALU: be32; ALU64: bswap32
		if c == asm.ClassALU64 {
			end = asm.SourceK
		}
		out = append(out, asm.Instruction{Op: asm.ALUOpCode(c, asm.ALUNeg, asm.SourceK)},
			asm.Instruction{Op: asm.ALUOpCode(c, asm.ALUMov, asm.SourceX), Off: 8}, // movsx
			asm.Instruction{Op: asm.ALUOpCode(c, asm.ALUEnd, end), Imm: 32})
	}
	return out
}

// shapeJumps are all conditional jump forms.
func shapeJumps() []asm.Instruction {
	var out []asm.Instruction
	for _, c := range []asm.Class{asm.ClassJMP, asm.ClassJMP32} {
		for _, op := range []asm.JumpOp{asm.JumpEq, asm.JumpGT, asm.JumpGE, asm.JumpSet, asm.JumpNE, asm.JumpSGT, asm.JumpSGE, asm.JumpLT, asm.JumpLE, asm.JumpSLT, asm.JumpSLE} {
			for _, s := range []asm.Source{asm.SourceK, asm.SourceX} {
				out = append(out, asm.Instruction{Op: asm.JumpOpCode(c, op, s)})
			}
		}
	}
	return out
}

// loadOperands loads a, b and d from the context (the first three 8-byte
// words; the jump and the ALU instruction read them) through r8, then
// sets r8 to 0.
func loadOperands(a, b, d asm.Register) []asm.Instruction {
	ld := func(r asm.Register, off int16) asm.Instruction {
		return asm.Instruction{Op: asm.OpCode(asm.ClassLDX) | asm.OpCode(asm.SizeDW) | asm.OpCode(asm.ModeMEM), Dst: r, Src: asm.R8, Off: off}
	}
	return []asm.Instruction{
		{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceX), Dst: asm.R8, Src: asm.R1},
		ld(d, 16), ld(b, 8), ld(a, 0),
		{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceK), Dst: asm.R8},
	}
}

// shapeTail returns a mix of a, b, d and r8 in r0 (multiplications in
// between, so that aliased registers do not cancel out), so that a wrong
// write to any of them shows.
func shapeTail(a, b, d asm.Register) []asm.Instruction {
	x := func(src asm.Register) asm.Instruction {
		return asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUXor, asm.SourceX), Dst: asm.R7, Src: src}
	}
	mul := asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMul, asm.SourceK), Dst: asm.R7, Imm: 0x3b9ac9ff}
	return []asm.Instruction{
		{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceX), Dst: asm.R7, Src: a},
		mul, x(b), mul, x(d), mul, x(asm.R8),
		{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceX), Dst: asm.R0, Src: asm.R7},
		{Op: asm.OpExit},
	}
}

// shapePrograms returns the programs of both shapes.
func shapePrograms() []*vm.Program {
	var progs []*vm.Program
	alus, jumps := shapeALUs(), shapeJumps()
	k := 0
	for _, j := range jumps {
		for _, al := range alus {
			r := shapeRegs[k%len(shapeRegs)]
			j.Dst, j.Src, j.Imm = r.a, r.b, shapeImms[k%len(shapeImms)]
			if j.Op.Source() == asm.SourceK {
				j.Src = 0
			} else {
				j.Imm = 0
			}
			al.Dst, al.Src = r.d, r.s
			if al.Op.Source() == asm.SourceK || al.Op.ALUOp() == asm.ALUEnd {
				al.Src = 0
			}
			switch op := al.Op.ALUOp(); {
			case op == asm.ALUEnd || op == asm.ALUNeg || al.Op.Source() == asm.SourceX:
			case op == asm.ALULsh || op == asm.ALURsh || op == asm.ALUArsh:
				al.Imm = shapeImms[(k+3)%len(shapeImms)] & 31
				if al.Op.Class() == asm.ClassALU64 {
					al.Imm += 32 * int32(k%2)
				}
			default:
				al.Imm = shapeImms[(k+3)%len(shapeImms)]
			}
			k++
			// Select: jcc a, b, +1; alu d, s.
			j.Off = 1
			insns := append(loadOperands(r.a, r.b, r.d), j, al)
			progs = append(progs, &vm.Program{Name: fmt.Sprintf("select %d", k), Insns: append(insns, shapeTail(r.a, r.b, r.d)...)})
			// The same with a second way into the ALU instruction: no select.
			first := asm.Instruction{Op: asm.JumpOpCode(asm.ClassJMP, asm.JumpEq, asm.SourceX), Dst: r.a, Src: r.d, Off: 1}
			insns = append(loadOperands(r.a, r.b, r.d), first, j, al)
			progs = append(progs, &vm.Program{Name: fmt.Sprintf("entered %d", k), Insns: append(insns, shapeTail(r.a, r.b, r.d)...)})
			// Flags: alu d, s; jeq/jne d, 0, +2; mov r8, 1; mov r8, 2 (only
			// jeq and jne against 0 take this shape; two instructions
			// jumped over, so no select either).
			if op := j.Op.JumpOp(); j.Op.Source() == asm.SourceK && (op == asm.JumpEq || op == asm.JumpNE) {
				jz := j
				jz.Dst, jz.Src, jz.Imm, jz.Off = r.d, 0, 0, 2
				mov := asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUAdd, asm.SourceK), Dst: asm.R8, Imm: 1}
				insns = append(loadOperands(r.a, r.b, r.d), al, jz, mov, mov)
				progs = append(progs, &vm.Program{Name: fmt.Sprintf("flags %d", k), Insns: append(insns, shapeTail(r.a, r.b, r.d)...)})
			}
			// Loop: head: jcc a, b, out; add r8, 1; jgt r8, 3, out; alu a, s;
			// ja head; [add r8, 100;] out: (at most 4 rounds; the exit right
			// after the back edge or one further).
			far := k%2 == 0
			skip := int16(0)
			if far {
				skip = 1
			}
			head := j
			head.Off = 4 + skip
			body := al
			body.Dst = r.a
			insns = append(loadOperands(r.a, r.b, r.d), head,
				asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUAdd, asm.SourceK), Dst: asm.R8, Imm: 1},
				asm.Instruction{Op: asm.JumpOpCode(asm.ClassJMP, asm.JumpGT, asm.SourceK), Dst: asm.R8, Imm: 3, Off: 2 + skip},
				body,
				asm.Instruction{Op: asm.OpJa, Off: -5})
			if far {
				insns = append(insns, asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUAdd, asm.SourceK), Dst: asm.R8, Imm: 100})
			}
			progs = append(progs, &vm.Program{Name: fmt.Sprintf("loop %d", k), Insns: append(insns, shapeTail(r.a, r.b, r.d)...)})
		}
	}
	return progs
}

// BranchShapes runs the select and flag-reuse shapes on the interpreter and
// the JIT, on every operand set, and fails on disagreements.
func BranchShapes(t *testing.T, compile Compile) {
	interp := vm.NewInterpreter()
	fails := 0
	progs := shapePrograms()
	for _, p := range progs {
		xi, err := interp.Compile(p)
		if err != nil {
			t.Fatalf("%s: interpreter: %v\n%s", p.Name, err, asm.Format(p.Insns))
		}
		xj, err := compile(p)
		if err != nil {
			t.Fatalf("%s: jit: %v\n%s", p.Name, err, asm.Format(p.Insns))
		}
		for _, ops := range shapeOperands {
			mem := make([]byte, 24)
			for i, v := range ops {
				binary.LittleEndian.PutUint64(mem[8*i:], v)
			}
			ri, erri := xi.Run(mem)
			rj, errj := xj.Run(mem)
			if erri != nil || errj != nil || ri != rj {
				t.Errorf("%s, operands %#x: interpreter %#x, %v; jit %#x, %v\n%s", p.Name, ops, ri, erri, rj, errj, asm.Format(p.Insns))
				if fails++; fails >= 5 {
					t.Fatal("stopping after 5 disagreements")
				}
			}
		}
		xi.Close()
		xj.Close()
	}
	t.Logf("%d programs × %d operand sets", len(progs), len(shapeOperands))
}

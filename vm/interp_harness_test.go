package vm

import (
	"errors"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
)

// A small instruction DSL for the interpreter's tables.

type ins = asm.Instruction

const (
	r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10 = asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5, asm.R6, asm.R7, asm.R8, asm.R9, asm.R10
)

func a64k(op asm.ALUOp, dst asm.Register, imm int32) ins {
	return ins{Op: asm.ALUOpCode(asm.ClassALU64, op, asm.SourceK), Dst: dst, Imm: imm}
}
func a64x(op asm.ALUOp, dst, src asm.Register) ins {
	return ins{Op: asm.ALUOpCode(asm.ClassALU64, op, asm.SourceX), Dst: dst, Src: src}
}
func a32k(op asm.ALUOp, dst asm.Register, imm int32) ins {
	return ins{Op: asm.ALUOpCode(asm.ClassALU, op, asm.SourceK), Dst: dst, Imm: imm}
}
func a32x(op asm.ALUOp, dst, src asm.Register) ins {
	return ins{Op: asm.ALUOpCode(asm.ClassALU, op, asm.SourceX), Dst: dst, Src: src}
}

// withOff sets the offset field (signed division, movsx).
func withOff(i ins, off int16) ins { i.Off = off; return i }

func mov(dst asm.Register, imm int32) ins { return a64k(asm.ALUMov, dst, imm) }
func movr(dst, src asm.Register) ins      { return a64x(asm.ALUMov, dst, src) }
func exit() ins                           { return ins{Op: asm.OpExit} }
func ja(off int16) ins                    { return ins{Op: asm.OpJa, Off: off} }
func ja32(imm int32) ins                  { return ins{Op: asm.OpJa32, Imm: imm} }
func call(id helpers.ID) ins              { return ins{Op: asm.OpCall, Imm: int32(id)} }
func callLocal(rel int32) ins             { return ins{Op: asm.OpCall, Src: asm.PseudoCall, Imm: rel} }
func callx(reg asm.Register) ins          { return ins{Op: asm.OpCallX, Dst: reg} }
func byteswap(c asm.Class, s asm.Source, dst asm.Register, w int32) ins {
	return ins{Op: asm.ALUOpCode(c, asm.ALUEnd, s), Dst: dst, Imm: w}
}

func jk(c asm.Class, op asm.JumpOp, dst asm.Register, imm int32, off int16) ins {
	return ins{Op: asm.JumpOpCode(c, op, asm.SourceK), Dst: dst, Imm: imm, Off: off}
}
func jx(c asm.Class, op asm.JumpOp, dst, src asm.Register, off int16) ins {
	return ins{Op: asm.JumpOpCode(c, op, asm.SourceX), Dst: dst, Src: src, Off: off}
}

func ldx(s asm.Size, dst, src asm.Register, off int16) ins {
	return ins{Op: asm.MemOpCode(asm.ClassLDX, asm.ModeMEM, s), Dst: dst, Src: src, Off: off}
}
func ldxsx(s asm.Size, dst, src asm.Register, off int16) ins {
	return ins{Op: asm.MemOpCode(asm.ClassLDX, asm.ModeMEMSX, s), Dst: dst, Src: src, Off: off}
}
func st(s asm.Size, dst asm.Register, off int16, imm int32) ins {
	return ins{Op: asm.MemOpCode(asm.ClassST, asm.ModeMEM, s), Dst: dst, Off: off, Imm: imm}
}
func stx(s asm.Size, dst, src asm.Register, off int16) ins {
	return ins{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeMEM, s), Dst: dst, Src: src, Off: off}
}
func atomicOp(s asm.Size, op int32, dst, src asm.Register, off int16) ins {
	return ins{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeAtomic, s), Dst: dst, Src: src, Off: off, Imm: op}
}

// prog flattens instructions and LD_IMM64 pairs into one slice.
func prog(parts ...any) []ins {
	var out []ins
	for _, p := range parts {
		switch v := p.(type) {
		case ins:
			out = append(out, v)
		case [2]ins:
			out = append(out, v[0], v[1])
		case []ins:
			out = append(out, v...)
		default:
			panic("prog: bad part")
		}
	}
	return out
}

func ld64(dst asm.Register, v uint64) [2]ins { return asm.LdImm64(dst, v) }

// ldmap is an LD_IMM64 with a pseudo source (map fd or map value).
func ldmap(dst asm.Register, src asm.Register, idx, off int32) [2]ins {
	return [2]ins{{Op: asm.OpLdImm64, Dst: dst, Src: src, Imm: idx}, {Imm: off}}
}

// runCase is one interpreter test: a program, optional input memory and
// either the expected r0 or an error that errors.Is must match.
type runCase struct {
	name  string
	insns []ins
	mem   []byte
	want  uint64
	err   error
}

// runTable compiles and runs each case on an interpreter built with opts
// and the given maps and helpers.
func runTable(t *testing.T, cases []runCase, p Program, opts ...InterpOption) {
	t.Helper()
	e := NewInterpreter(opts...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := p
			q.Name = tc.name
			q.Insns = tc.insns
			x, err := e.Compile(&q)
			if err != nil {
				if tc.err != nil && errors.Is(err, tc.err) {
					return
				}
				t.Fatalf("Compile: %v", err)
			}
			defer x.Close()
			got, err := x.Run(tc.mem)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Run = %#x, %v; want error %v", got, err, tc.err)
				}
				t.Logf("error as expected: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got != tc.want {
				t.Fatalf("Run = %#x, want %#x", got, tc.want)
			}
		})
	}
}

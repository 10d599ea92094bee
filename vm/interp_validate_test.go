package vm

import (
	"errors"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

func TestCompileRejects(t *testing.T) {
	lddw := ld64(r0, 1)
	cases := []struct {
		name  string
		insns []ins
		pc    int
		want  string // a substring of the reason
	}{
		{"empty", nil, -1, "no instructions"},
		{"unknown ALU op", prog(ins{Op: 0xe7}, exit()), 0, "unknown ALU operation"},
		{"unknown jump op", prog(ins{Op: 0xe5}, exit()), 0, "unknown jump operation"},
		{"bad dst register", prog(ins{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceK), Dst: 11}, exit()), 0, "register out of range"},
		{"bad src register", prog(mov(r0, 0), ins{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUAdd, asm.SourceX), Src: 15}, exit()), 1, "register out of range"},
		{"write r10", prog(mov(r10, 0), exit()), 0, "frame pointer"},
		{"load into r10", prog(ldx(DW, r10, r1, 0), exit()), 0, "frame pointer"},
		{"lddw into r10", prog(ld64(r10, 1), exit()), 0, "frame pointer"},
		{"fetch into r10", prog(atomicOp(DW, asm.AtomicAdd|asm.AtomicFetch, r1, r10, 0), exit()), 0, "frame pointer"},
		{"jump past end", prog(ja(5), exit()), 0, "outside the program"},
		{"jump before start", prog(jk(asm.ClassJMP, asm.JumpEq, r0, 0, -3), exit()), 0, "outside the program"},
		{"jump into lddw", prog(ja(1), lddw, exit()), 0, "second slot"},
		{"gotol past end", prog(ja32(9), exit()), 0, "outside the program"},
		{"local call past end", prog(callLocal(7), exit()), 0, "outside the program"},
		{"truncated lddw", prog(mov(r0, 0), lddw[0]), 1, "truncated"},
		{"lddw second slot opcode", prog(lddw[0], ins{Op: 0x18}, exit()), 1, "second slot"},
		{"lddw bad src", prog(ldmap(r0, 5, 0, 0), exit()), 0, "unsupported src"},
		{"lddw missing map", prog(ldmap(r0, asm.PseudoMapFD, 3, 0), exit()), 0, "refers to map 3"},
		{"legacy packet load", prog(ins{Op: 0x20}, exit()), 0, "unsupported load"},
		{"falls off the end", prog(mov(r0, 0)), 0, "falls off"},
		{"conditional falls off the end", prog(mov(r0, 0), jk(asm.ClassJMP, asm.JumpEq, r0, 0, -2)), 1, "falls off"},
		{"call falls off the end", prog(mov(r0, 0), call(idUnwind)), 1, "falls off"},
		{"lddw falls off the end", prog(mov(r0, 0), lddw), 1, "falls off"},
		{"unknown helper", prog(call(99), exit()), 0, "unknown helper"},
		{"main falls into subprogram", prog(mov(r0, 1), callLocal(0), exit()), 1, "falls through into the subprogram at pc 2"},
		{"subprogram falls into subprogram", prog(callLocal(1), exit(), mov(r0, 1), callLocal(0), exit()), 3, "falls through"},
		{"lddw ends subprogram", prog(callLocal(2), callLocal(4), exit(), mov(r0, 1), ld64(r0, 1), mov(r0, 1), exit()), 4, "falls through"},
		{"jump into subprogram", prog(callLocal(2), ja(1), exit(), mov(r0, 1), exit()), 1, "leaves the function"},
		{"jump out of subprogram", prog(callLocal(1), exit(), jk(asm.ClassJMP, asm.JumpEq, r1, 0, -2), exit()), 2, "leaves the function"},
		{"kfunc call", prog(ins{Op: asm.OpCall, Src: 2, Imm: 1}, exit()), 0, "unsupported src"},
		{"callx with imm", prog(ins{Op: asm.OpCallX, Imm: 2}, exit()), 0, "callx"},
		{"exit in jmp32", prog(ins{Op: 0x96}, exit()), 0, "exit"},
		{"call in jmp32", prog(ins{Op: 0x86, Imm: 5}, exit()), 0, "jmp32"},
		{"ja with src X", prog(ins{Op: 0x0d}, exit()), 0, "reserved"},
		{"sdiv bad offset", prog(withOff(a64k(asm.ALUDiv, r0, 1), 2), exit()), 0, "offset"},
		{"add with offset", prog(withOff(a64k(asm.ALUAdd, r0, 1), 1), exit()), 0, "offset"},
		{"movsx32 by 32", prog(withOff(a32x(asm.ALUMov, r0, r1), 32), exit()), 0, "sign-extension"},
		{"movsx imm", prog(withOff(a64k(asm.ALUMov, r0, 1), 8), exit()), 0, "sign-extension"},
		{"neg with src X", prog(a64x(asm.ALUNeg, r0, r1), exit()), 0, "neg"},
		{"bad swap width", prog(byteswap(asm.ClassALU, asm.SourceX, r0, 24), exit()), 0, "width"},
		{"bswap from X", prog(byteswap(asm.ClassALU64, asm.SourceX, r0, 16), exit()), 0, "bswap"},
		{"ldxsdw", prog(ldxsx(DW, r0, r1, 0), exit()), 0, "double word"},
		{"atomic byte", prog(atomicOp(B, asm.AtomicAdd, r1, r2, 0), exit()), 0, "atomic"},
		{"unknown atomic", prog(atomicOp(DW, 0x10, r1, r2, 0), exit()), 0, "unknown atomic"},
		{"atomic in st", prog(ins{Op: asm.MemOpCode(asm.ClassST, asm.ModeAtomic, DW)}, exit()), 0, "class st"},
		{"imm on register ALU", prog(ins{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUAdd, asm.SourceX), Imm: 1}, exit()), 0, "nonzero imm"},
		{"src on immediate jump", prog(ins{Op: asm.JumpOpCode(asm.ClassJMP, asm.JumpEq, asm.SourceK), Src: 1}, exit()), 0, "nonzero src"},
	}
	p := nativeProgram()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := p
			q.Name = tc.name
			q.Insns = tc.insns
			x, err := NewInterpreter().Compile(&q)
			if err == nil {
				x.Close()
				t.Fatal("compiled")
			}
			if !errors.Is(err, ErrInvalidProgram) {
				t.Errorf("error %v does not wrap ErrInvalidProgram", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			var ce *CompileError
			if tc.pc >= 0 && (!errors.As(err, &ce) || ce.PC != tc.pc) {
				t.Errorf("error %v: want pc %d", err, tc.pc)
			}
		})
	}
}

func TestCompileRejectsBadHelperTable(t *testing.T) {
	p := Program{Insns: prog(exit()), Helpers: HelperTable{5: {ID: 5}}}
	if _, err := NewInterpreter().Compile(&p); !errors.Is(err, ErrInvalidProgram) {
		t.Fatalf("helper without address: %v", err)
	}
	if _, err := NewInterpreter().Compile(nil); !errors.Is(err, ErrInvalidProgram) {
		t.Fatalf("nil program: %v", err)
	}
}

// FuzzCompileRun: arbitrary instruction bytes never crash Compile or Run
// (go test -fuzz FuzzCompileRun ./vm/).
func FuzzCompileRun(f *testing.F) {
	f.Add(asm.Encode(prog(mov(r0, 1), exit())))
	f.Add(asm.Encode(prog(ld64(r1, 0), ldx(DW, r0, r1, 0), exit())))
	f.Add(asm.Encode(prog(callLocal(-1), exit())))
	f.Fuzz(func(t *testing.T, b []byte) {
		insns, err := asm.Decode(b[:len(b)/8*8])
		if err != nil {
			t.Fatal(err)
		}
		// Only helpers that take no pointers: the others trust their
		// arguments, as the verifier guarantees.
		p := nativeProgram()
		p.Helpers = HelperTable{idUnwind: p.Helpers[idUnwind], idSum: p.Helpers[idSum]}
		p.Insns = insns
		x, err := NewInterpreter(WithBudget(10000)).Compile(&p)
		if err != nil {
			return
		}
		mem := make([]byte, 64)
		_, err = x.Run(mem)
		if errors.Is(err, ErrInternal) {
			t.Fatalf("internal error: %v", err)
		}
	})
}

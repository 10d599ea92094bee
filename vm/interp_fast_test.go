package vm

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

// TestFastPathsMatchGeneric runs every fast-path opcode on edge operands
// twice, through its fast path and through the general code, and compares.
func TestFastPathsMatchGeneric(t *testing.T) {
	values := []uint64{0, 1, 2, 31, 32, 63, 64, 65, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 32,
		1<<63 - 1, 1 << 63, ^uint64(0), 0xdeadbeef12345678}
	imms := []int32{0, 1, -1, 31, 32, 63, 64, -0x80000000, 0x7fffffff}
	n := 0
	for op, fop := range fastOps {
		if op == asm.OpLdImm64 || op == asm.OpJa {
			continue
		}
		for _, a := range values {
			for i, b := range values {
				in := asm.Instruction{Op: op, Dst: r0, Src: r1}
				if op.Source() == asm.SourceK {
					in.Src, in.Imm = 0, imms[i%len(imms)]
				}
				var body []ins
				if op.Class().IsJump() {
					in.Off = 2
					body = prog(in, mov(r0, 0), exit(), mov(r0, 1), exit())
				} else {
					body = prog(in, exit())
				}
				x, err := NewInterpreter().Compile(&Program{Insns: prog(ld64(r0, a), ld64(r1, b), body)})
				if err != nil {
					t.Fatalf("%#x: %v", op, err)
				}
				ix := x.(*interpExec)
				if ix.code[4].fop != fop {
					t.Fatalf("opcode %#x: fop %d, want %d", op, ix.code[4].fop, fop)
				}
				fast, err1 := x.Run(nil)
				for pc := range ix.code {
					ix.code[pc].fop = fGeneric
				}
				slow, err2 := x.Run(nil)
				if err1 != nil || err2 != nil || fast != slow {
					t.Fatalf("opcode %#x imm %d on %#x, %#x: fast %#x (%v), generic %#x (%v)", op, in.Imm, a, b, fast, err1, slow, err2)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no fast path tested")
	}
}

package vm

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

// benchLoop is a small compute loop: for i in 1..1000, acc = acc*31 + i%7
// + (acc >> 3) with a data-dependent branch; ~8 instructions per iteration.
var benchLoop = prog(
	mov(r0, 0), mov(r1, 1000),
	movr(r2, r1), a64k(asm.ALUMod, r2, 7), // loop:
	a64k(asm.ALUMul, r0, 31), a64x(asm.ALUAdd, r0, r2),
	movr(r3, r0), a64k(asm.ALURsh, r3, 3), a64x(asm.ALUXor, r0, r3),
	a64k(asm.ALUSub, r1, 1), jk(asm.ClassJMP, asm.JumpNE, r1, 0, -9),
	exit(),
)

// BenchmarkInterpLoop measures the interpreter on benchLoop; compare with
// the JIT's benchmark of the same program (ns/op covers 9002 instructions).
func BenchmarkInterpLoop(b *testing.B) {
	x := compile(b, Program{Insns: benchLoop})
	want, err := x.Run(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, _ := x.Run(nil); got != want {
			b.Fatal("result changed")
		}
	}
}

// BenchmarkInterpEmpty measures the fixed cost of one Run.
func BenchmarkInterpEmpty(b *testing.B) {
	x := compile(b, Program{Insns: prog(mov(r0, 0), exit())})
	b.ReportAllocs()
	for b.Loop() {
		x.Run(nil)
	}
}

// BenchmarkInterpHelper measures a helper call through the cgo trampoline.
func BenchmarkInterpHelper(b *testing.B) {
	p := nativeProgram()
	p.Insns = prog(mov(r1, 1), call(idSum), exit())
	x := compile(b, p)
	b.ReportAllocs()
	for b.Loop() {
		x.Run(nil)
	}
}

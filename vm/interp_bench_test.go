package vm

import "testing"

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

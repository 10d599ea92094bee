package amd64

import (
	"strconv"
	"testing"

	"github.com/ncclbpf/ncclbpf/vm"
)

// BenchmarkCompile measures compiling a generated program of about 500
// instruction slots (all classes, calls, atomics), W^X mapping included.
func BenchmarkCompile(b *testing.B) {
	prog := genSized(500)
	b.Run("insns="+strconv.Itoa(len(prog.Insns)), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x, err := Compile(prog)
			if err != nil {
				b.Fatal(err)
			}
			x.Close()
		}
	})
}

// genSized returns the first generated program with n±10% slots.
func genSized(n int) *vm.Program {
	for seed := uint64(1); ; seed++ {
		p, _ := genProgram(seed, n/4)
		if l := len(p.Insns); l*10 >= n*9 && l*10 <= n*11 {
			return p
		}
	}
}

package vm_test

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/vm"
)

// computeLoop is a small compute loop: for i = 1000 down to 1,
// acc = (acc*31 + i%7) ^ (acc >> 3); 9 instructions per iteration, 9002 in
// all, one of them (mod) off the interpreter's fast paths.
func computeLoop() []asm.Instruction {
	alu := func(op asm.ALUOp, s asm.Source, dst, src asm.Register, imm int32) asm.Instruction {
		return asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, op, s), Dst: dst, Src: src, Imm: imm}
	}
	k, x := asm.SourceK, asm.SourceX
	return []asm.Instruction{
		alu(asm.ALUMov, k, asm.R0, 0, 0), alu(asm.ALUMov, k, asm.R1, 0, 1000),
		alu(asm.ALUMov, x, asm.R2, asm.R1, 0), alu(asm.ALUMod, k, asm.R2, 0, 7), // loop:
		alu(asm.ALUMul, k, asm.R0, 0, 31), alu(asm.ALUAdd, x, asm.R0, asm.R2, 0),
		alu(asm.ALUMov, x, asm.R3, asm.R0, 0), alu(asm.ALURsh, k, asm.R3, 0, 3), alu(asm.ALUXor, x, asm.R0, asm.R3, 0),
		alu(asm.ALUSub, k, asm.R1, 0, 1),
		{Op: asm.JumpOpCode(asm.ClassJMP, asm.JumpNE, asm.SourceK), Dst: asm.R1, Off: -9},
		{Op: asm.OpExit},
	}
}

// BenchmarkComputeLoop runs computeLoop on each engine through Run (the
// JIT's Run includes one cgo call).
func BenchmarkComputeLoop(b *testing.B) {
	for _, e := range []vm.Engine{vm.NewInterpreter(), native.New()} {
		b.Run(e.Name(), func(b *testing.B) {
			x, err := e.Compile(&vm.Program{Name: "loop", Insns: computeLoop()})
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
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
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/9002, "ns/insn")
		})
	}
}

// TestComputeLoopAgrees: both engines compute the same value.
func TestComputeLoopAgrees(t *testing.T) { diff(t, computeLoop()) }

package amd64

import (
	"encoding/binary"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/jit/internal/jittest"
	"github.com/ncclbpf/ncclbpf/vm"
)

// FuzzCompile feeds arbitrary instruction words to Compile: it must never
// panic, and it must not accept a program the interpreter refuses (the JIT
// may refuse more: jumps between functions). Nothing is run.
//
//	go test ./jit/amd64 -run XXX -fuzz FuzzCompile -fuzztime 1m
func FuzzCompile(f *testing.F) {
	for _, src := range []string{
		"mov %r0, 1\nexit",
		"lddw %r1, 0x1122334455667788\ncall local f\nexit\nf:\nsdiv32 %r0, %r1\nexit",
		"mov %r2, 5\ncall %r2\nlock fetch or [%r10-8], %r0\nja -3\nexit",
	} {
		insns, err := asm.Assemble(src)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(asm.Encode(insns))
	}
	interp := vm.NewInterpreter()
	f.Fuzz(func(t *testing.T, code []byte) {
		code = code[:len(code)&^7]
		insns := make([]asm.Instruction, len(code)/8)
		for i := range insns {
			insns[i] = asm.DecodeOne(binary.LittleEndian.Uint64(code[8*i:]))
		}
		p := &vm.Program{Name: "fuzz", Insns: insns, Helpers: ctest.Table()}
		x, err := Compile(p)
		if err != nil {
			return
		}
		x.Close()
		if xi, err := interp.Compile(p); err != nil {
			t.Fatalf("the JIT compiled a program the interpreter refuses (%v):\n%s", err, asm.Format(insns))
		} else {
			xi.Close()
		}
	})
}

// FuzzDifferential runs the differential check on generated programs chosen
// by the fuzzer (seed and size).
//
//	go test ./jit/amd64 -run XXX -fuzz FuzzDifferential -fuzztime 1m
func FuzzDifferential(f *testing.F) {
	f.Add(uint64(1), uint8(30))
	f.Add(uint64(12345), uint8(90))
	interp := vm.NewInterpreter()
	f.Fuzz(func(t *testing.T, seed uint64, size uint8) {
		if msg := jittest.DiffOne(interp, compileSeed, seed, 5+int(size)%120); msg != "" {
			p, _ := jittest.GenProgram(seed, 5+int(size)%120)
			t.Fatalf("seed %d size %d: %s\n%s", seed, size, msg, asm.Format(p.Insns))
		}
	})
}

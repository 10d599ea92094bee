package amd64

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/jit/internal/executable"
	"github.com/ncclbpf/ncclbpf/jit/internal/jittest"
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
	// The compiler alone: analysis and emission, without mapping pages.
	b.Run("emit-only/insns="+strconv.Itoa(len(prog.Insns)), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := newCompiler(prog)
			if err != nil {
				b.Fatal(err)
			}
			c.base = 0x10000000
			if err := c.emitProgram(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// genSized returns the first generated program with n±10% slots.
func genSized(n int) *vm.Program {
	for seed := uint64(1); ; seed++ {
		p, _ := jittest.GenProgram(seed, n/4)
		if l := len(p.Insns); l*10 >= n*9 && l*10 <= n*11 {
			return p
		}
	}
}

// benchPolicy is shaped like a tuner policy: read the context, bucket the
// message size by log2, look a decision up in an array map, clamp it,
// write it back and count the call atomically.
const benchPolicy = `
ldxdw %r2, [%r1+0]
ldxw %r3, [%r1+8]
ldxw %r4, [%r1+12]
mov %r5, 0
mov %r6, %r2
loop:
jlt %r6, 2, done
rsh %r6, 1
add %r5, 1
ja loop
done:
jle %r5, 31, ok
mov %r5, 31
ok:
mov %r7, %r3
and %r7, 7
lsh %r7, 5
add %r7, %r5
lsh %r7, 3
lddw %r8, map_value(0)+0
add %r8, %r7
ldxdw %r9, [%r8+0]
mov %r0, %r9
and %r0, 0xff
stxw [%r1+16], %r0
mov %r0, %r9
rsh %r0, 8
and %r0, 0xff
stxw [%r1+20], %r0
rsh %r9, 16
and %r9, 0xff
mov %r0, %r4
lsh %r0, 1
jle %r9, %r0, +1
mov %r9, %r0
stxw [%r1+24], %r9
lddw %r8, map_value(0)+2048
mov %r0, 1
lock add [%r8+0], %r0
mov %r0, 0
exit`

// benchProgram assembles src with one array map of 257 8-byte values
// (backed by table, which the caller keeps alive).
func benchProgram(b *testing.B, src string, table []uint64) *vm.Program {
	insns, err := asm.Assemble(src)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 256 {
		table[i] = uint64(i%6) | uint64(i%3)<<8 | uint64(1+i%32)<<16
	}
	m := vm.MapRef{Name: "decisions", Handle: 1, Type: 2, KeySize: 4, ValueSize: 8, MaxEntries: 257,
		ArrayBase: uintptr(unsafe.Pointer(&table[0])), ArrayStride: 8}
	return &vm.Program{Name: "bench", Insns: insns, Maps: []vm.MapRef{m}, Helpers: ctest.Table()}
}

// benchCtx is the policy's context: bytes, coll, nranks, then three outputs.
func benchCtx() []byte {
	ctx := make([]byte, 32)
	binary.LittleEndian.PutUint64(ctx[0:], 1<<22)
	binary.LittleEndian.PutUint32(ctx[8:], 2)
	binary.LittleEndian.PutUint32(ctx[12:], 8)
	return ctx
}

// BenchmarkRun compares the engines on each program: interp and jit run
// through Executable.Run (jit pays one cgo call per run); jit-native calls
// the entry point from a C loop, as NCCL's threads do.
func BenchmarkRun(b *testing.B) {
	compute, err := os.ReadFile(filepath.Join("testdata", "loop", "compute.s"))
	if err != nil {
		b.Fatal(err)
	}
	// compute: 1000 rounds of xorshift, multiply, compare and branch.
	for _, prog := range []struct{ name, src string }{{"compute", string(compute)}, {"policy", benchPolicy}} {
		table := make([]uint64, 257)
		p := benchProgram(b, prog.src, table)
		xi, err := vm.NewInterpreter().Compile(p)
		if err != nil {
			b.Fatal(err)
		}
		xj, err := Compile(p)
		if err != nil {
			b.Fatal(err)
		}
		ctx := benchCtx()
		ri, _ := xi.Run(ctx)
		rj, _ := xj.Run(ctx)
		if ri != rj {
			b.Fatalf("%s: interp %#x, jit %#x", prog.name, ri, rj)
		}
		b.Run(prog.name+"/interp", func(b *testing.B) {
			for b.Loop() {
				xi.Run(ctx)
			}
		})
		b.Run(prog.name+"/jit", func(b *testing.B) {
			for b.Loop() {
				xj.Run(ctx)
			}
		})
		b.Run(prog.name+"/jit-native", func(b *testing.B) {
			b.ResetTimer()
			executable.RunLoop(xj.compiled, ctx, b.N)
		})
		xi.Close()
		xj.Close()
	}
}

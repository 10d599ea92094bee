//go:build arm64

package arm64

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/jittest"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The tests both JITs pass are in jit/internal/jittest; this file runs them
// (those that depend on atomics in both lowerings) and adds what is about
// AArch64 code.

// compile is the engine's Compile with the lowering of atomics the CPU
// selects, for jittest.
var compile = New().Compile

// compileAtomics compiles with the given lowering of atomics.
func compileAtomics(mode AtomicsMode) jittest.Compile {
	return NewWithOptions(Options{Atomics: mode}).Compile
}

// compileSeed compiles generated program seed: odd seeds use the
// exclusive-pair atomics, even ones LSE.
func compileSeed(p *vm.Program, seed uint64) (vm.Executable, error) {
	mode := AtomicsLSE
	if seed%2 == 1 {
		mode = AtomicsExclusive
	}
	return compileAtomics(mode)(p)
}

// compileText assembles src and compiles it with the ctest helpers.
func compileText(t *testing.T, src string) *Executable {
	t.Helper()
	return jittest.CompileText(t, compile, src).(*Executable)
}

func TestSemantics(t *testing.T) {
	for _, mode := range []AtomicsMode{AtomicsLSE, AtomicsExclusive} {
		jittest.Semantics(t, compileAtomics(mode), fmt.Sprintf("/atomics%d", mode))
	}
}

func TestHelperArgumentsAndLog(t *testing.T) { jittest.HelperArgumentsAndLog(t, compile) }
func TestMapLoads(t *testing.T)              { jittest.MapLoads(t, compile) }
func TestArrayLookups(t *testing.T)          { jittest.ArrayLookups(t, compile) }
func TestCompileErrors(t *testing.T)         { jittest.CompileErrors(t, compile) }
func TestCloseAndEntry(t *testing.T)         { jittest.CloseAndEntry(t, New()) }
func TestConcurrentRuns(t *testing.T)        { jittest.ConcurrentRuns(t, compile) }
func TestCallDepthBoundary(t *testing.T)     { jittest.CallDepthBoundary(t, compile) }
func TestCallxWithoutHelpers(t *testing.T)   { jittest.CallxWithoutHelpers(t, compile) }
func TestDifferential(t *testing.T)          { jittest.Differential(t, compileSeed) }
func TestFoldDifferential(t *testing.T)      { jittest.FoldDifferential(t, compile) }

func TestPCMap(t *testing.T) {
	code, m := jittest.PCMap(t, compile)
	// The subprogram's prologue belongs to its first pc: stp x29, x30 first.
	if w := binary.LittleEndian.Uint32(code[m[5].Start:]); w != encSTPpre(x29, x30, sp, -16) {
		t.Errorf("pc 5 starts with %#08x, want stp x29, x30, [sp,#-16]!", w)
	}
}

// A fault or unwind branch at the start of a program whose code exceeds the
// ±1 MiB reach of B.cond/CBZ: the compiler emits the program again with
// every conditional branch as an inverted branch over a B.
func TestFarBranches(t *testing.T) {
	const pad = 300000 // 4 bytes each: 1.2 MB between the branch and the stubs
	body := strings.Repeat("add %r0, 1\n", pad)
	x := compileText(t, "mov %r2, 3\ncall %r2\n"+body+"exit")
	if len(x.Code()) < 1<<20 {
		t.Fatalf("code is %d bytes, want more than 1 MiB", len(x.Code()))
	}
	var fe *FaultError
	if _, err := x.Run(nil); !errors.As(err, &fe) || fe.Kind != FaultCallx || fe.PC != 1 {
		t.Fatalf("Run = %v, want a callx fault at pc 1", err)
	}
	y := compileText(t, "mov %r1, 0\ncall 5\n"+body+"exit")
	if r, err := y.Run(nil); err != nil || r != 0 {
		t.Fatalf("unwind: Run = %d, %v; want 0, nil", r, err)
	}
	z := compileText(t, "mov %r1, 1\ncall 5\nmov %r0, 0\n"+body+"exit")
	if r, err := z.Run(nil); err != nil || r != pad {
		t.Fatalf("no unwind: Run = %d, %v; want %d", r, err, pad)
	}
}

func TestBranchShapes(t *testing.T) { jittest.BranchShapes(t, compile) }

// CBZ and CBNZ reach ±1 MiB: a program whose forward branches reach
// farther (here the unwind branch of call 5 at pc 3) is emitted again with
// every conditional branch as the opposite test over a B, CBZ/CBNZ
// included, forward and backward.
func TestFarCBZ(t *testing.T) {
	const pad = 300000 // 4 bytes each: 1.2 MB
	src := "mov %r6, %r1\nmov %r1, 1\nmov %r0, 0\ncall 5\nmov %r2, 3\nloop:\nadd %r0, 10\nsub %r2, 1\njne %r2, 0, loop\n" +
		"jeq %r6, 0, +2\nadd %r0, 1000000\nadd %r0, 1000000\n" + strings.Repeat("add %r0, 1\n", pad) + "exit"
	x := compileText(t, src)
	insns, _ := asm.Assemble(src)
	head := x.Listing(insns[:12])
	for _, want := range []string{"cbz x1, .+0x8", "cbnz x19, .+0x8"} {
		if !strings.Contains(head, want) {
			t.Errorf("no %q in the long form:\n%s", want, head)
		}
	}
	if r, err := x.Run(nil); err != nil || r != 1+30+pad {
		t.Fatalf("cbz taken: Run = %d, %v; want %d", r, err, 1+30+pad)
	}
	if r, err := x.Run(make([]byte, 8)); err != nil || r != 1+30+2000000+pad {
		t.Fatalf("cbz not taken: Run = %d, %v; want %d", r, err, 1+30+2000000+pad)
	}
}

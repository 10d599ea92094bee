package amd64

import (
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/jit/internal/jittest"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The tests both JITs pass are in jit/internal/jittest; this file runs them
// and adds what is about x86-64 code.

// compile is the engine's Compile, for jittest.
var compile = New().Compile

// compileSeed compiles a generated program (one lowering: the seed is unused).
func compileSeed(p *vm.Program, _ uint64) (vm.Executable, error) { return compile(p) }

// compileText assembles src and compiles it with the ctest helpers.
func compileText(t *testing.T, src string, maps ...vm.MapRef) *Executable {
	t.Helper()
	return jittest.CompileText(t, compile, src, maps...).(*Executable)
}

func TestSemantics(t *testing.T)             { jittest.Semantics(t, compile, "") }
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
	// The subprogram's prologue belongs to its first pc: push rbp first.
	if code[m[5].Start] != 0x55 {
		t.Errorf("pc 5 starts with %#x, want push rbp (0x55)", code[m[5].Start])
	}
}

func TestDisassemble(t *testing.T) {
	insns, _ := asm.Assemble("mov %r0, 1\nlddw %r1, 0x1122334455667788\njeq %r0, 1, +1\ncall 2\nexit")
	out, err := Disassemble(&vm.Program{Name: "d", Insns: insns, Helpers: ctest.Table()})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"; prologue\n", "sub rsp, 0x8", // helper call: rsp 16-byte aligned; no stack, nothing to save
		"0: mov %r0, 1\n", "mov eax, 0x1",
		"1: lddw %r1, 0x1122334455667788\n", "mov rdi, 0x1122334455667788",
		"3: jeq %r0, 1, +1\n", "cmp rax, 0x1",
		"4: call 2\n", "call ",
		"5: exit\n", "ret",
		"; out of line",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
}

// An acyclic call graph within the depth limit needs no run-time check.
func TestNoDepthCheckWhenStaticallyBounded(t *testing.T) {
	const acyclic = "call local f\nexit\nf:\ncall local g\nexit\ng:\nmov %r0, 1\nexit"
	xi, _ := asm.Assemble(acyclic)
	x := compileText(t, acyclic)
	if l := x.Listing(xi); strings.Contains(l, "r12-") || !strings.Contains(l, "call ") {
		t.Fatalf("depth check emitted (or no calls listed):\n%s", l)
	}
	y := compileText(t, "mov %r1, 1\ncall local f\nexit\nf:\njeq %r1, 0, +1\ncall local f\nexit")
	insns, _ := asm.Assemble("mov %r1, 1\ncall local f\nexit\nf:\njeq %r1, 0, +1\ncall local f\nexit")
	if !strings.Contains(y.Listing(insns), "lea r11, ptr [r12-") {
		t.Fatalf("no depth check in a recursive program:\n%s", y.Listing(insns))
	}
}

func TestBranchShapes(t *testing.T) { jittest.BranchShapes(t, compile) }

// Package jittest holds the tests both JIT backends must pass, written once:
// the random program generator and the differential harness that runs its
// programs on the reference interpreter and on a JIT, semantic corner
// cases, compile errors, faults, concurrency and the folding of frozen
// .rodata loads. Each backend's tests call these with its own compile
// function (jit/amd64, and jit/arm64 under qemu-aarch64 on x86-64 hosts),
// and keep only what is about its encoder and lowering.
package jittest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/jit/internal/executable"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Compile compiles a program with the backend under test.
type Compile func(p *vm.Program) (vm.Executable, error)

// CompileText assembles src and compiles it with the ctest helpers and
// maps; the executable is closed when t ends.
func CompileText(t testing.TB, compile Compile, src string, maps ...vm.MapRef) vm.Executable {
	t.Helper()
	insns, err := asm.Assemble(src)
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	x, err := compile(&vm.Program{Name: t.Name(), Insns: insns, Helpers: ctest.Table(), Maps: maps})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// The cases target register-allocation corners that the conformance corpus
// does not reach: operands living in the registers a backend's division,
// shifts and compare-and-exchange use implicitly (rax/rdx, rcx on x86-64;
// x0-x4 as helper arguments and x7 as r0 on AArch64), values kept across
// calls, faults at depth.
var semanticCases = []struct {
	name string
	src  string
	mem  []byte
	want uint64
	err  error
}{
	{"div dst r3 keeps r0", "mov %r0, 7\nmov %r3, 100\nmov %r1, 7\ndiv %r3, %r1\nadd %r0, %r3\nexit", nil, 7 + 14, nil},
	{"div dst r0 keeps r3", "mov %r3, 5\nmov %r0, 100\ndiv %r0, %r3\nadd %r0, %r3\nexit", nil, 20 + 5, nil},
	{"mod by r0", "mov %r0, 7\nmov %r4, 100\nmod %r4, %r0\nmov %r0, %r4\nexit", nil, 2, nil},
	{"div by r3 into r0", "mov %r3, 6\nmov %r0, 100\ndiv %r0, %r3\nexit", nil, 16, nil},
	{"mod r3 by r3", "mov %r3, 6\nmod %r3, %r3\nmov %r0, %r3\nexit", nil, 0, nil},
	{"div by zero reg", "mov %r0, 9\nmov %r1, 0\ndiv %r0, %r1\nexit", nil, 0, nil},
	{"mod by zero reg keeps", "mov %r0, 9\nmov %r1, 0\nmod %r0, %r1\nexit", nil, 9, nil},
	{"mod32 by zero zero-extends", "lddw %r0, 0x100000009\nmov %r1, 0\nmod32 %r0, %r1\nexit", nil, 9, nil},
	{"mod32 by zero imm", "lddw %r0, 0x100000009\nmod32 %r0, 0\nexit", nil, 9, nil},
	{"div by -1 imm unsigned", "mov %r0, -1\ndiv %r0, -1\nexit", nil, 1, nil},
	{"div32 unsigned by -1", "mov %r0, -2\ndiv32 %r0, -1\nexit", nil, 0, nil},
	{"sdiv INT64_MIN/-1", "lddw %r0, 0x8000000000000000\nmov %r1, -1\nsdiv %r0, %r1\nrsh %r0, 60\nexit", nil, 8, nil},
	{"smod INT64_MIN/-1", "lddw %r0, 0x8000000000000000\nmov %r1, -1\nsmod %r0, %r1\nexit", nil, 0, nil},
	{"sdiv32 INT32_MIN/-1", "mov32 %r0, 0x80000000\nsdiv32 %r0, -1\nexit", nil, 0x80000000, nil},
	{"smod negative", "mov %r0, -7\nsmod %r0, 2\nexit", nil, 0xffffffffffffffff, nil},
	{"sdiv32 negative", "mov32 %r0, -7\nmov %r2, 2\nsdiv32 %r0, %r2\nexit", nil, 0xfffffffd, nil},
	{"shift by r4 into r4", "mov %r4, 3\nlsh %r4, %r4\nmov %r0, %r4\nexit", nil, 24, nil},
	{"shift r4 keeps r4", "mov %r4, 5\nmov %r2, 2\nmov %r0, 1\nlsh %r0, %r2\nadd %r0, %r4\nexit", nil, 4 + 5, nil},
	{"shift dst r4 by r2", "mov %r4, 1\nmov %r2, 4\nlsh %r4, %r2\nmov %r0, %r4\nexit", nil, 16, nil},
	{"arsh32 by 33 masks", "mov32 %r0, 0x80000000\nmov %r1, 33\narsh32 %r0, %r1\nexit", nil, 0xc0000000, nil},
	{"lsh32 by 32 reg zero-extends", "lddw %r0, 0xffffffff00000001\nmov %r1, 32\nlsh32 %r0, %r1\nexit", nil, 1, nil},
	{"fetch or r0 base and src", "mov %r0, %r10\nadd %r0, -8\nmov %r5, %r0\nstdw [%r10-8], 6\nlock fetch or [%r0+0], %r0\nldxdw %r2, [%r10-8]\nor %r5, 6\njne %r2, %r5, fail\nexit\nfail:\nmov %r0, -1\nexit", nil, 6, nil},
	{"fetch xor32 keeps r0", "mov %r0, 77\nstw [%r10-4], 5\nmov %r2, 3\nlock fetch xor32 [%r10-4], %r2\nldxw %r3, [%r10-4]\nlsh %r3, 8\nor %r3, %r2\nlsh %r3, 8\nor %r0, %r3\nexit", nil, (6<<16 | 5<<8) | 77, nil},
	{"cmpxchg32 success zero-extends r0", "stw [%r10-4], 5\nlddw %r0, 0x700000005\nmov %r1, 9\nlock cmpxchg32 [%r10-4], %r1\nldxw %r2, [%r10-4]\nlsh %r2, 32\nor %r0, %r2\nexit", nil, 9<<32 | 5, nil},
	{"helper keeps r6-r9", "mov %r6, 6\nmov %r7, 7\nmov %r8, 8\nmov %r9, 9\nmov %r1, 1\ncall 2\nmul %r6, %r7\nmul %r8, %r9\nadd %r6, %r8\nadd %r0, %r6\nexit", nil, 1 + 42 + 72, nil},
	{"aligned at depth", "call local f\nexit\nf:\ncall local g\nexit\ng:\ncall 7\nexit", nil, 1, nil},
	{"unwind from depth 3", "mov %r6, 1\ncall local f\nmov %r0, 99\nexit\nf:\ncall local g\nmov %r0, 98\nexit\ng:\nmov %r1, 0\ncall 5\nmov %r0, 97\nexit", nil, 0, nil},
	{"callx unwind", "mov %r1, 0\nmov %r2, 5\ncall %r2\nmov %r0, 2\nexit", nil, 0, nil},
	{"callx sum", "mov %r1, 40\nmov %r2, 1\nmov %r3, 1\nmov %r4, 0\nmov %r5, 0\nmov %r7, 2\ncall %r7\nexit", nil, 42, nil},
	{"callx unknown", "mov %r2, 3\ncall %r2\nexit", nil, 0, executable.ErrUnknownHelper},
	{"callx huge id", "lddw %r2, 0x100000002\ncall %r2\nexit", nil, 0, executable.ErrUnknownHelper},
	{"recursion depth fault", "mov %r1, 100\ncall local f\nexit\nf:\njeq %r1, 0, out\nsub %r1, 1\ncall local f\nout:\nmov %r0, %r1\nexit", nil, 0, executable.ErrCallDepth},
	{"bounded recursion ok", "mov %r1, 6\ncall local f\nexit\nf:\nmov %r0, 0\njeq %r1, 0, out\nsub %r1, 1\ncall local f\nadd %r0, 1\nout:\nexit", nil, 6, nil},
	{"r10 per frame", "stdw [%r10-8], 11\ncall local f\nldxdw %r1, [%r10-8]\nadd %r0, %r1\nexit\nf:\nstdw [%r10-8], 22\nldxdw %r0, [%r10-8]\nexit", nil, 33, nil},
	{"backward loop", "mov %r0, 0\nmov %r1, 300\nloop:\nadd %r0, %r1\nsub %r1, 1\njne %r1, 0, loop\nexit", nil, 300 * 301 / 2, nil},
	{"r1 r2 entry", "mov %r0, %r2\nldxb %r3, [%r1+2]\nlsh %r0, 8\nor %r0, %r3\nexit", []byte{1, 2, 3}, 3<<8 | 3, nil},
	{"registers start at zero", "add %r0, %r3\nadd %r0, %r4\nadd %r0, %r5\nadd %r0, %r6\nadd %r0, %r7\nadd %r0, %r8\nadd %r0, %r9\nexit", nil, 0, nil},
	{"jset32 ignores high", "lddw %r1, 0x100000000\nmov %r0, 1\njset32 %r1, -1, +1\nexit\nmov %r0, 2\nexit", nil, 1, nil},
	{"gotol", "mov %r0, 1\ngotol +1\nmov %r0, 2\nexit", nil, 1, nil},
}

// Semantics runs the semantic corner cases; name tells the subtests apart
// when a backend runs them more than once (one per lowering).
func Semantics(t *testing.T, compile Compile, name string) {
	for _, tc := range semanticCases {
		t.Run(tc.name+name, func(t *testing.T) {
			x := CompileText(t, compile, tc.src)
			got, err := x.Run(append([]byte(nil), tc.mem...))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Run = %#x, %v; want error %v", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Run = %#x, %v; want %#x", got, err, tc.want)
			}
		})
	}
}

// HelperArgumentsAndLog checks that helpers receive r1-r5 and that an
// unwinding helper ends the program with r0 = 0.
func HelperArgumentsAndLog(t *testing.T, compile Compile) {
	x := CompileText(t, compile, "mov %r1, 1\nmov %r2, 2\nmov %r3, 3\nmov %r4, 4\nmov %r5, 5\ncall 2\nmov %r6, %r0\nmov %r1, 0\ncall 5\nmov %r0, 7\nexit")
	ctest.Reset()
	got, err := x.Run(nil)
	if err != nil || got != 0 {
		t.Fatalf("Run = %d, %v; want 0 (unwound)", got, err)
	}
	log, n := ctest.Log()
	if n != 2 || log[0] != (ctest.Call{ID: 2, Args: [5]uint64{1, 2, 3, 4, 5}}) || log[1].ID != 5 || log[1].Args[0] != 0 {
		t.Fatalf("helper log = %+v", log)
	}
}

// MapLoads checks LD_IMM64 of a map handle and of a map value's address,
// and that an offset beyond an array map is refused.
func MapLoads(t *testing.T, compile Compile) {
	vals := make([]uint64, 4)
	vals[2] = 0xabcdef
	maps := []vm.MapRef{
		{Name: "h", Handle: 0x1234_5678_9abc, Type: 1, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		{Name: "arr", Handle: 1, Type: 2, KeySize: 4, ValueSize: 8, MaxEntries: 4, ArrayBase: uintptr(unsafe.Pointer(&vals[0])), ArrayStride: 8},
	}
	x := CompileText(t, compile, "lddw %r1, map(0)\nlddw %r2, map_value(1)+16\nldxdw %r0, [%r2+0]\nadd %r0, %r1\nexit", maps...)
	got, err := x.Run(nil)
	if want := uint64(0x1234_5678_9abc + 0xabcdef); err != nil || got != want {
		t.Fatalf("Run = %#x, %v; want %#x", got, err, want)
	}
	insns, _ := asm.Assemble("lddw %r2, map_value(1)+32\nexit")
	if _, err := compile(&vm.Program{Insns: insns, Maps: maps}); !errors.Is(err, vm.ErrInvalidProgram) {
		t.Fatalf("map value offset beyond the array: %v", err)
	}
}

// CompileErrors checks that malformed programs are refused with
// vm.ErrInvalidProgram and a message that says what is wrong (the
// structure package's, which every engine shares).
func CompileErrors(t *testing.T, compile Compile) {
	for _, tc := range []struct{ name, src, msg string }{
		{"unknown helper", "call 99\nexit", "unknown helper 99"},
		{"falls off the end", "mov %r0, 1", "falls off the end"},
		{"falls into a function", "call local f\ncall local g\nexit\nf:\nmov %r0, 2\ng:\nmov %r0, 3\nexit", "falls through into the subprogram at pc 4"},
		{"writes r10", "mov %r10, 1\nexit", "r10"},
		{"jump outside", "ja +5\nexit", "outside the program"},
		{"jump into lddw", "ja +1\nlddw %r0, 1\nexit", "second slot"},
		{"cross-function jump", "call local f\nja f\nf:\nexit", "leaves the function"},
		{"bad width", ".insn 0x00000011000000d4\nexit", "width 17"},
		{"bad movsx", ".insn 0x00000000000701bc\nexit", "sign-extension offset 7"},
		{"memsx dw", ".insn 0x0000000000000199\nexit", "sign-extending load of a double word"},
		{"atomic byte", ".insn 0x00000000000001d3\nexit", "atomic"},
		{"bad atomic op", ".insn 0x00000002000001db\nexit", "unknown atomic"},
		{"legacy ld", ".insn 0x0000000000000020\nexit", "unsupported load opcode"},
		{"lddw src 4", ".insn 0x0000000000004118\n.insn 0\nexit", "unsupported src 4"},
		{"map index", "lddw %r1, map(3)\nexit", "refers to map 3"},
		{"exit in jmp32", ".insn 0x0000000000000096\nexit", "exit uses reserved fields"},
	} {
		insns, err := asm.Assemble(tc.src)
		if err != nil {
			t.Fatalf("%s: assemble: %v", tc.name, err)
		}
		_, err = compile(&vm.Program{Name: "bad", Insns: insns, Helpers: ctest.Table()})
		if !errors.Is(err, vm.ErrInvalidProgram) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: Compile error %v, want %q", tc.name, err, tc.msg)
		}
	}
	exit, _ := asm.Assemble("exit")
	for name, table := range map[string]vm.HelperTable{
		"helper without address":  {9: {ID: 9}},
		"helper under another id": {9: {ID: 8, Addr: ctest.Addr(ctest.Sum)}},
	} {
		if _, err := compile(&vm.Program{Insns: exit, Helpers: table}); !errors.Is(err, vm.ErrInvalidProgram) {
			t.Errorf("%s: Compile error %v", name, err)
		}
	}
	if _, err := compile(nil); !errors.Is(err, vm.ErrInvalidProgram) {
		t.Errorf("nil program: %v", err)
	}
	if _, err := compile(&vm.Program{}); !errors.Is(err, vm.ErrInvalidProgram) {
		t.Errorf("empty program: %v", err)
	}
}

// CloseAndEntry checks the engine's name, its native entry point, Run and
// Close after Close.
func CloseAndEntry(t *testing.T, e vm.Engine) {
	insns, _ := asm.Assemble("mov %r0, 5\nexit")
	if e.Name() != "jit" {
		t.Fatalf("Name = %q", e.Name())
	}
	exe, err := e.Compile(&vm.Program{Insns: insns})
	if err != nil {
		t.Fatal(err)
	}
	nx, ok := exe.(vm.NativeExecutable)
	if !ok || nx.Entry() == 0 {
		t.Fatal("not a NativeExecutable with an entry point")
	}
	if err := exe.Close(); err != nil {
		t.Fatal(err)
	}
	if nx.Entry() != 0 {
		t.Fatal("Entry after Close is not 0")
	}
	if _, err := exe.Run(nil); !errors.Is(err, executable.ErrClosed) {
		t.Fatalf("Run after Close = %v", err)
	}
	if err := exe.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// ConcurrentRuns runs one executable from 8 goroutines at once.
func ConcurrentRuns(t *testing.T, compile Compile) {
	x := CompileText(t, compile, "mov %r0, 0\nmov %r3, 1000\nloop:\nldxdw %r4, [%r1+0]\nadd %r0, %r4\nsub %r3, 1\njne %r3, 0, loop\nexit")
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			mem := []byte{byte(g), 0, 0, 0, 0, 0, 0, 0}
			for range 200 {
				if r, err := x.Run(mem); err != nil || r != uint64(g)*1000 {
					done <- errors.New("wrong result under concurrency")
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// PCMapProgram is the program PCMap checks: a subprogram starts at pc 5.
const PCMapProgram = "mov %r0, 1\nlddw %r1, 0x1122334455667788\ncall local f\nexit\nf:\nmov %r0, 2\nexit"

// PCMap checks that the pc map of PCMapProgram has one contiguous range
// per slot, the second slot of the LD_IMM64 empty, and returns the code
// and the map (the backend checks that the subprogram's prologue is
// counted as pc 5's).
func PCMap(t *testing.T, compile Compile) ([]byte, []executable.Range) {
	t.Helper()
	x, ok := CompileText(t, compile, PCMapProgram).(interface {
		PCMap() []executable.Range
		Code() []byte
	})
	if !ok {
		t.Fatal("the executable has no PCMap")
	}
	m := x.PCMap()
	if len(m) != 7 {
		t.Fatalf("PCMap has %d entries, want 7", len(m))
	}
	prev := m[0].Start
	for _, r := range m {
		if r.Start != prev || r.End < r.Start {
			t.Fatalf("ranges not contiguous: %+v", m)
		}
		prev = r.End
	}
	if m[2].Start != m[2].End {
		t.Errorf("second slot of lddw has code: %+v", m[2])
	}
	return x.Code(), m
}

// CallDepthBoundary checks that the depth limit is exact and the same as
// the interpreter's: with n = 6 the recursion uses 8 frames (the limit),
// with n = 7 it needs 9.
func CallDepthBoundary(t *testing.T, compile Compile) {
	const src = "mov %%r1, %d\ncall local f\nexit\nf:\nmov %%r0, 0\njeq %%r1, 0, out\nsub %%r1, 1\ncall local f\nadd %%r0, 1\nout:\nexit"
	for n := 4; n <= 9; n++ {
		insns, err := asm.Assemble(fmt.Sprintf(src, n))
		if err != nil {
			t.Fatal(err)
		}
		p := &vm.Program{Name: "depth", Insns: insns}
		xi, err := vm.NewInterpreter().Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		ri, erri := xi.Run(nil)
		xj := CompileText(t, compile, fmt.Sprintf(src, n))
		rj, errj := xj.Run(nil)
		if ri != rj || !SameFault(erri, errj) || (n <= 6) != (errj == nil) {
			t.Errorf("n=%d: interp %d, %v; jit %d, %v", n, ri, erri, rj, errj)
		}
	}
}

// CallxWithoutHelpers checks that callx in a program with an empty helper
// table faults at its pc.
func CallxWithoutHelpers(t *testing.T, compile Compile) {
	insns, _ := asm.Assemble("mov %r1, 1\nmov %r2, 0\ncall %r2\nexit")
	x, err := compile(&vm.Program{Name: "nohelpers", Insns: insns})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var fe *executable.FaultError
	if _, err := x.Run(nil); !errors.As(err, &fe) || fe.Kind != executable.FaultCallx || fe.PC != 2 {
		t.Fatalf("Run = %v, want a callx fault at pc 2", err)
	}
}

package structure

import (
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

func assemble(t *testing.T, src string) []asm.Instruction {
	t.Helper()
	insns, err := asm.Assemble(src)
	if err != nil {
		t.Fatalf("assemble %q: %v", src, err)
	}
	return insns
}

func TestValidateDescribes(t *testing.T) {
	insns := assemble(t, `
		lddw %r1, 7
		jeq %r1, 0, done
		call local f
	done:
		exit
	f:
		mov %r0, 1
		ja out
	out:
		exit`)
	p, e := Validate(insns, Options{})
	if e != nil {
		t.Fatal(e)
	}
	wantKinds := []Kind{LdImm64, Second, Branch, LocalCall, Exit, Plain, Goto, Exit}
	for pc, k := range wantKinds {
		if p.Kind(pc) != k {
			t.Errorf("pc %d: kind %d, want %d", pc, p.Kind(pc), k)
		}
	}
	if len(p.Funcs) != 2 || p.Funcs[0].Start != 0 || p.Funcs[0].End != 5 || len(p.Funcs[0].Calls) != 1 || p.Funcs[0].Calls[0] != 3 ||
		p.Funcs[1].Start != 5 || p.Funcs[1].End != 8 {
		t.Errorf("functions %+v, want [0,5) calling at pc 3 and [5,8)", p.Funcs)
	}
	for pc, want := range map[int]int{2: 4, 3: 5, 6: 7, 0: -1, 4: -1} {
		if got := p.Target(pc); got != want {
			t.Errorf("pc %d: target %d, want %d", pc, got, want)
		}
	}
	if p.Next(0) != 2 || p.Next(2) != 3 {
		t.Errorf("Next(0)=%d Next(2)=%d, want 2 and 3", p.Next(0), p.Next(2))
	}
	if p.FuncOf(6) != 1 || p.Callee(3) != 1 || p.HasCallx() {
		t.Errorf("FuncOf(6)=%d Callee(3)=%d HasCallx=%v", p.FuncOf(6), p.Callee(3), p.HasCallx())
	}
}

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		opts Options
		code Code
		pc   int
		msg  string
	}{
		{"empty", "", Options{}, MissingExit, 0, "empty"},
		{"register", ".insn 0x00000000000000b7\n.insn 0x000000000000000fb7\nexit", Options{}, InvalidRegister, 1, "r15"},
		{"write r10", "mov %r10, 1\nexit", Options{}, InvalidRegister, 0, "r10"},
		{"callx refused", "call helper %r1\nexit", Options{}, InvalidOpcode, 0, "callx"},
		{"map index", "lddw %r1, map(2)\nexit", Options{Maps: 2}, BadMapRef, 0, "map 2"},
		{"second slot", ".insn 0x0000000000000118\n.insn 0x0000000000000007\nexit", Options{}, InvalidOpcode, 1, "second slot"},
		{"truncated", "mov %r0, 0\n.insn 0x0000000000000018", Options{}, InvalidOpcode, 1, "truncated"},
		{"jump out", "ja +5\nexit", Options{}, JumpOutOfRange, 0, "outside"},
		{"into lddw", "ja +1\nlddw %r0, 1\nexit", Options{}, JumpIntoLdImm64, 0, "second slot"},
		{"call out", "call local +9\nexit", Options{}, JumpOutOfRange, 0, "call target"},
		{"leaves function", "call local f\nja f\nf:\nexit", Options{}, BadJumpTarget, 1, "leaves the function"},
		{"falls off", "mov %r0, 0", Options{}, MissingExit, 0, "falls off"},
		{"falls into function", "call local f\nf:\nexit", Options{}, MissingExit, 0, "subprogram at pc 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insns := assemble(t, tc.src)
			p, e := Validate(insns, tc.opts)
			if e == nil {
				t.Fatalf("validated: %+v", p.Funcs)
			}
			if e.Code != tc.code || e.PC != tc.pc || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("got %v, want %v at pc %d saying %q", e, tc.code, tc.pc, tc.msg)
			}
		})
	}
	if _, e := Validate(assemble(t, "call helper %r1\nexit"), Options{Callx: true}); e != nil {
		t.Errorf("callx with Options.Callx: %v", e)
	}
}

func TestCheckCalls(t *testing.T) {
	p, e := Validate(assemble(t, "call local f\nexit\nf:\ncall local g\nexit\ng:\nexit"), Options{})
	if e != nil {
		t.Fatal(e)
	}
	if e := p.CheckCalls(3); e != nil {
		t.Errorf("3 frames within 3: %v", e)
	}
	if e := p.CheckCalls(2); e == nil || e.Code != CallDepth || e.PC != 2 {
		t.Errorf("3 frames within 2: got %v, want %v at pc 2", e, CallDepth)
	}
	p, e = Validate(assemble(t, "call local f\nexit\nf:\ncall local f\nexit"), Options{})
	if e != nil {
		t.Fatal(e)
	}
	if e := p.CheckCalls(8); e == nil || e.Code != CallDepth || !strings.Contains(e.Msg, "recursive") {
		t.Errorf("recursion: got %v", e)
	}
}

package arm64

import (
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// branchShapeCases pin the code of pcs [0, upto) of small programs
// (compiled on any host, never run here): a jump over one ALU instruction
// becomes a csel keeping the register when the jump would be taken (the
// instruction computed into x11 first; a 32-bit result is zero-extended
// there), unless another jump lands on that instruction; jeq and jne
// against 0 become CBZ and CBNZ, 64- or 32-bit; the back edge of a loop
// whose head tests for the exit repeats the test and branches back on the
// opposite condition past the head.
var branchShapeCases = []struct {
	src    string
	upto   int
	native string
}{
	{"jgt %r5, %r3, +1\nadd %r0, %r5\nexit", 2, "add x11, x7, x4; cmp x4, x2; csel x7, x7, x11, hi"},
	{"jle32 %r1, 31, +1\nmov32 %r1, 31\nmov %r0, %r1\nexit", 2, "mov w11, #0x1f; cmp w0, #0x1f; csel x0, x0, x11, ls"},
	{"jsgt %r1, %r2, +1\nmov %r1, %r2\nmov %r0, %r1\nexit", 2, "cmp x0, x1; csel x0, x0, x1, gt"},
	{"jset %r2, 1, +1\nmov32 %r0, %r2\nexit", 2, "mov w11, w1; mov x9, #0x1; tst x1, x9; csel x7, x7, x11, ne"},
	{"jlt %r1, %r4, +1\nrsh %r0, 3\nexit", 2, "lsr x11, x7, #3; cmp x0, x3; csel x7, x7, x11, cc"},
	{"jeq %r1, 0, +1\ndiv %r0, 3\nexit", 1, "cbz x0, .+0xc  ; -> 10"},
	{"jeq %r1, 0, +1\njgt %r1, 5, +1\nadd %r0, 1\nexit", 2, "cbz x0, .+0xc  ; -> 10; cmp x0, #0x5; b.hi .+0x8  ; -> 14"},
	{"mov %r4, 3\nsub %r4, 1\njne %r4, 0, -2\nexit", 3, "mov x3, #0x3; sub x3, x3, #0x1; cbnz x3, .+0xfffffffffffffffc  ; -> 8"},
	{"jne32 %r1, 0, +2\nmov %r0, 1\nmov %r0, 2\nexit", 1, "cbnz w0, .+0xc  ; -> 10"},
	{"jlt %r1, 2, +3\nrsh %r1, 1\nadd %r0, 1\nja -4\nexit", 4, "cmp x0, #0x2; b.cc .+0x14  ; -> 1c; lsr x0, x0, #1; add x7, x7, #0x1; cmp x0, #0x2; b.cs .+0xfffffffffffffff4  ; -> c"},
	{"jeq32 %r1, 0, +4\nrsh %r1, 1\nadd %r0, 1\nja -4\nmov %r0, 9\nexit", 4, "cbz w0, .+0x18  ; -> 1c; lsr x0, x0, #1; add x7, x7, #0x1; cbnz w0, .+0xfffffffffffffff8  ; -> 8; b .+0x8  ; -> 1c"},
}

func TestBranchShapeLowering(t *testing.T) {
	for _, tc := range branchShapeCases {
		insns, err := asm.Assemble(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		x, err := Compile(&vm.Program{Name: "shape", Insns: insns})
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		m := x.PCMap()
		var got []string
		for _, l := range NativeLines(x.Code(), m[0].Start, m[tc.upto].Start) {
			l = strings.TrimSpace(l)
			got = append(got, l[strings.Index(l, "  ")+2:]) // after "OFFSET: WORD"
		}
		x.Close()
		if g := strings.Join(got, "; "); g != tc.native {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, g, tc.native)
		}
	}
}

package analysis

import "testing"

// Select accepts a conditional jump over one ALU instruction that only the
// jump reaches and that computes without a fault, nothing else.
func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		src  string
		pc   int
		want bool
	}{
		{"jgt %r1, %r2, +1\nadd %r0, %r1\nexit", 0, true},
		{"jle32 %r1, 31, +1\nmov32 %r1, 31\nmov %r0, %r1\nexit", 0, true},
		{"jset %r1, 4, +1\nlsh %r0, 3\nexit", 0, true},
		{"jeq %r1, 0, +1\nneg32 %r0\nexit", 0, true},
		{"jeq %r1, 0, +1\nmul %r0, %r1\nexit", 0, true},
		{"jeq %r1, 0, +2\nadd %r0, 1\nadd %r0, 1\nexit", 0, false},     // two instructions
		{"jeq %r1, 0, +1\njgt %r1, 5, +1\nadd %r0, 1\nexit", 1, false}, // pc 2 is a target
		{"jeq %r1, 0, +1\ndiv %r0, %r1\nexit", 0, false},
		{"jeq %r1, 0, +1\nmod %r0, 3\nexit", 0, false},
		{"jeq %r1, 0, +1\nlsh %r0, %r1\nexit", 0, false},
		{"jeq %r1, 0, +1\nmovsx832 %r0, %r1\nexit", 0, false},
		{"jeq %r1, 0, +1\nbe16 %r0\nexit", 0, false},
		{"jeq %r1, 0, +1\nldxdw %r0, [%r1+0]\nexit", 0, false},
		{"jeq %r1, 0, +1\nja +0\nexit", 0, false},
		{"ja +1\nadd %r0, 1\nexit", 0, false},
		{"mov %r0, 1\nexit", 0, false},
	} {
		a, err := analyze(t, tc.src, nil, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if got := a.Select(tc.pc); got != tc.want {
			t.Errorf("%q: Select(%d) = %v, want %v", tc.src, tc.pc, got, tc.want)
		}
	}
}

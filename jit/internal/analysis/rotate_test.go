package analysis

import "testing"

// RotateLoop accepts a back edge to a conditional exit, nothing else.
func TestRotateLoop(t *testing.T) {
	for _, tc := range []struct {
		src  string
		pc   int
		head int
		want bool
	}{
		{"jlt %r1, 2, +3\nrsh %r1, 1\nadd %r0, 1\nja -4\nexit", 3, 0, true},
		{"mov %r0, 0\njeq32 %r1, 0, +4\nrsh %r1, 1\nadd %r0, 1\nja -4\nmov %r0, 9\nexit", 4, 1, true},
		{"mov %r0, 0\njeq %r1, 0, +3\nrsh %r1, 1\nadd %r0, 1\ngotol -4\nexit", 4, 1, true},
		{"jlt %r1, 2, +1\nmov %r0, 1\nja -3\nexit", 2, 0, false},                      // the head is a select
		{"add %r0, 1\njlt %r0, 5, +1\nexit\nja -4", 3, 0, false},                      // the head is no jump
		{"ja +1\nexit\njeq %r1, 0, -2\nmov %r0, 1\nexit", 0, 0, false},                // forward
		{"jeq %r1, 0, +2\nja -2\nexit\njeq %r1, 0, +0\nja -2\nexit", 4, 0, false},     // head to head+1
		{"jlt %r1, 2, +3\nrsh %r1, 1\nadd %r0, 1\njne %r1, 5, -4\nexit", 3, 0, false}, // conditional back edge
	} {
		a, err := analyze(t, tc.src, nil, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		head, ok := a.RotateLoop(tc.pc)
		if ok != tc.want || (ok && head != tc.head) {
			t.Errorf("%q: RotateLoop(%d) = %d, %v; want %d, %v", tc.src, tc.pc, head, ok, tc.head, tc.want)
		}
	}
}

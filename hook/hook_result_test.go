package hook_test

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
)

// TestRangeResult pins what the host reads from r0: the verifier checks a
// C int return on the low 32 bits, so the host must read exactly those
// (upper bits set must not change the outcome).
func TestRangeResult(t *testing.T) {
	tuner := hook.Get(hook.Tuner).Return
	if !tuner.IsCInt() {
		t.Fatalf("tuner return %v is not a C int", tuner)
	}
	for _, c := range []struct {
		r0   uint64
		want int64
	}{
		{0, 0},
		{1, 1},
		{0xffffffff, -1},            // w0 = -1
		{0x1_0000_0000, 0},          // upper bits ignored
		{0xdead_beef_0000_0001, 1},  // upper bits ignored
		{0xffff_ffff_ffff_ffff, -1}, // r0 = -1
	} {
		if got := tuner.Result(c.r0); got != c.want {
			t.Errorf("Result(%#x) = %d, want %d", c.r0, got, c.want)
		}
	}
	wide := hook.Range{Min: 0, Max: 1 << 40}
	if wide.IsCInt() || wide.Result(1<<33) != 1<<33 {
		t.Errorf("a 64-bit return range must read all of r0")
	}
}

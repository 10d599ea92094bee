package verifier

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/structure"
)

// TestStructureCodes: the structure package's codes are the verifier's
// codes of the same name.
func TestStructureCodes(t *testing.T) {
	for _, c := range []struct {
		s structure.Code
		v Code
	}{
		{structure.InvalidOpcode, InvalidOpcode}, {structure.InvalidRegister, InvalidRegister},
		{structure.JumpOutOfRange, JumpOutOfRange}, {structure.JumpIntoLdImm64, JumpIntoLdImm64},
		{structure.MissingExit, MissingExit}, {structure.CallDepth, CallDepth},
		{structure.BadMapRef, BadMapRef}, {structure.BadJumpTarget, BadJumpTarget},
	} {
		if Code(c.s) != c.v {
			t.Errorf("structure code %v is the verifier's %v, want %v", c.s, Code(c.s), c.v)
		}
	}
}

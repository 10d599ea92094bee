package loader

import (
	"errors"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

// TestValidateCodes checks that each structural fault the loader finds
// carries the verifier's stable code and the pc at fault.
func TestValidateCodes(t *testing.T) {
	prog := func(src string) *ProgramSpec {
		insns, err := asm.Assemble(src)
		if err != nil {
			t.Fatal(err)
		}
		return &ProgramSpec{Name: "f", Insns: insns, Lines: make([]*LineInfo, len(insns)), Funcs: []Func{{Name: "f", Start: 0, End: len(insns)}}}
	}
	ldimm := prog("lddw %r0, 1\nexit")
	ldimm.Insns[1].Op = asm.OpExit // damage the second slot
	for _, c := range []struct {
		name string
		p    *ProgramSpec
		code string
		pc   int
	}{
		{"empty", &ProgramSpec{Name: "f"}, "E005 missing-exit", -1},
		{"jump past end", prog("ja +5\nexit"), "E003 jump-out-of-range", 0},
		{"jump into ldimm64", prog("jeq %r1, 0, +1\nlddw %r0, 1\nexit"), "E004 jump-into-ldimm64", 0},
		{"map out of range", prog("lddw %r1, map(3)\nmov %r0, 0\nexit"), "E031 bad-map-ref", 0},
		{"call into a function's middle", prog("call local +1\nmov %r0, 0\nexit"), "E032 bad-jump-target", 0},
		{"damaged ldimm64", ldimm, "E001 invalid-opcode", 1},
	} {
		err := c.p.validate(nil)
		var se *StructureError
		if !errors.As(err, &se) || se.Code != c.code || se.PC != c.pc {
			t.Errorf("%s: %v, want %s at pc %d", c.name, err, c.code, c.pc)
		}
	}
}

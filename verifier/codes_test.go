package verifier_test

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// TestCodesStable pins code numbers and names: they are append-only.
func TestCodesStable(t *testing.T) {
	for code, want := range map[verifier.Code]string{
		verifier.InvalidOpcode:        "E001 invalid-opcode",
		verifier.JumpIntoLdImm64:      "E004 jump-into-ldimm64",
		verifier.UninitRegister:       "E010 uninit-register",
		verifier.NullDeref:            "E012 null-deref",
		verifier.MemOutOfBounds:       "E014 mem-oob",
		verifier.CtxWidth:             "E017 ctx-width",
		verifier.PointerLeak:          "E021 pointer-leak",
		verifier.InfiniteLoop:         "E025 infinite-loop",
		verifier.Complexity:           "E026 complexity",
		verifier.BadReturn:            "E027 bad-return",
		verifier.BadJumpTarget:        "E032 bad-jump-target",
		verifier.DivByZero:            "W100 div-by-zero",
		verifier.NullablePointerArith: "E022 nullable-ptr-arith",
	} {
		if got := code.String(); got != want {
			t.Errorf("code %d: String() = %q, want %q", int(code), got, want)
		}
		if c, ok := verifier.ParseCode(want[:4]); !ok || c != code {
			t.Errorf("ParseCode(%q) = %v, %v", want[:4], c, ok)
		}
	}
	for c := verifier.InvalidOpcode; c <= verifier.BadJumpTarget; c++ {
		if c.Name() == "unknown" {
			t.Errorf("code %d has no name", int(c))
		}
	}
}

// TestInfoStates checks that Info receives the abstract pre-states.
func TestInfoStates(t *testing.T) {
	insns, err := asm.Assemble("ldxw %r2, [%r1+0]\nand %r2, 15\nmov %r0, %r2\nexit")
	if err != nil {
		t.Fatal(err)
	}
	info := &verifier.Info{States: map[int][]string{}}
	res, err := (&verifier.Config{Hook: testHook}).Verify(insns, info)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.States[3]; len(got) != 1 || got[0] != "r0=scalar u[0,15] r1=ctx pointer ctx+0 r2=scalar u[0,15]" {
		t.Errorf("state at pc 3 = %q", got)
	}
	if res.Visits != 4 {
		t.Errorf("Visits = %d, want 4", res.Visits)
	}
}

// TestDivisionWarning checks the warning names the pc and the divisor.
func TestDivisionWarning(t *testing.T) {
	insns, _ := asm.Assemble("ldxw %r2, [%r1+4]\nmov %r0, 100\ndiv %r0, %r2\nexit")
	res, err := (&verifier.Config{Hook: testHook}).Verify(insns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Code != verifier.DivByZero || res.Warnings[0].PC != 2 {
		t.Fatalf("warnings = %v", res.Warnings)
	}
	insns, _ = asm.Assemble("ldxw %r2, [%r1+4]\nor %r2, 1\nmov %r0, 100\ndiv %r0, %r2\nexit")
	if res, err := (&verifier.Config{Hook: testHook}).Verify(insns, nil); err != nil || len(res.Warnings) != 0 {
		t.Errorf("non-zero divisor: %v, %v", res, err)
	}
}

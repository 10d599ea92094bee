package verifier_test

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// TestCodesStable pins every code's number and name: codes are
// append-only, so a renumbered, renamed or removed code fails here, and a
// new code must be added to this table (at the end) to pass.
func TestCodesStable(t *testing.T) {
	pinned := []struct {
		code verifier.Code
		want string
	}{
		{verifier.InvalidOpcode, "E001 invalid-opcode"},
		{verifier.InvalidRegister, "E002 invalid-register"},
		{verifier.JumpOutOfRange, "E003 jump-out-of-range"},
		{verifier.JumpIntoLdImm64, "E004 jump-into-ldimm64"},
		{verifier.MissingExit, "E005 missing-exit"},
		{verifier.UnreachableCode, "E006 unreachable-code"},
		{verifier.TooManyInstructions, "E007 too-many-insns"},
		{verifier.CallDepth, "E008 call-depth"},
		{verifier.StackBudget, "E009 stack-budget"},
		{verifier.UninitRegister, "E010 uninit-register"},
		{verifier.UninitStack, "E011 uninit-stack"},
		{verifier.NullDeref, "E012 null-deref"},
		{verifier.StackOutOfBounds, "E013 stack-oob"},
		{verifier.MemOutOfBounds, "E014 mem-oob"},
		{verifier.CtxOutOfLayout, "E015 ctx-out-of-layout"},
		{verifier.CtxAccessDenied, "E016 ctx-access-denied"},
		{verifier.CtxWidth, "E017 ctx-width"},
		{verifier.UnknownHelper, "E018 unknown-helper"},
		{verifier.HelperNotAllowed, "E019 helper-not-allowed"},
		{verifier.BadHelperArg, "E020 bad-helper-arg"},
		{verifier.PointerLeak, "E021 pointer-leak"},
		{verifier.NullablePointerArith, "E022 nullable-ptr-arith"},
		{verifier.BadPointerArith, "E023 bad-ptr-arith"},
		{verifier.PointerCompare, "E024 ptr-compare"},
		{verifier.InfiniteLoop, "E025 infinite-loop"},
		{verifier.Complexity, "E026 complexity"},
		{verifier.BadReturn, "E027 bad-return"},
		{verifier.NotAPointer, "E028 not-a-pointer"},
		{verifier.ReadOnlyMap, "E029 readonly-map"},
		{verifier.UnreleasedRef, "E030 unreleased-ref"},
		{verifier.BadMapRef, "E031 bad-map-ref"},
		{verifier.BadJumpTarget, "E032 bad-jump-target"},
		{verifier.RankDivergent, "E033 rank-divergent"},
		{verifier.WriteOnlyMap, "E034 writeonly-map"},
		{verifier.UseAfterRelease, "E035 use-after-release"},
		{verifier.MisalignedAtomic, "E036 misaligned-atomic"},
		{verifier.WrongContext, "E037 wrong-context"},
		{verifier.DivByZero, "W100 div-by-zero"},
	}
	known := map[verifier.Code]bool{}
	for _, p := range pinned {
		known[p.code] = true
		if got := p.code.String(); got != p.want {
			t.Errorf("code %d: String() = %q, want %q (codes are append-only: never renumber or rename one)", int(p.code), got, p.want)
		}
		if c, ok := verifier.ParseCode(p.want[:4]); !ok || c != p.code {
			t.Errorf("ParseCode(%q) = %v, %v", p.want[:4], c, ok)
		}
		if c, ok := verifier.ParseCode(p.want[5:]); !ok || c != p.code {
			t.Errorf("ParseCode(%q) = %v, %v", p.want[5:], c, ok)
		}
	}
	// Every named code is pinned above: a new code is appended to the table.
	for c := verifier.Code(0); c < 1000; c++ {
		if c.Name() != "unknown" && !known[c] {
			t.Errorf("code %v is not pinned in TestCodesStable: append it to the table", c)
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

// TestLoaderStructureCodes keeps the codes of the loader's structural
// errors the verifier's: each must name an existing error code exactly.
func TestLoaderStructureCodes(t *testing.T) {
	for _, s := range loader.StructureCodes {
		c, ok := verifier.ParseCode(s)
		if !ok || c.String() != s || c.IsWarning() {
			t.Errorf("loader code %q is not the verifier's code %v", s, c)
		}
	}
}

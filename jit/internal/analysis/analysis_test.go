package analysis

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

func analyze(t *testing.T, src string, maps []vm.MapRef, table vm.HelperTable) (*Info, error) {
	t.Helper()
	insns, err := asm.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	return Analyze(&vm.Program{Name: t.Name(), Insns: insns, Maps: maps, Helpers: table})
}

func regs(rs []asm.Register) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.String())
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

// The frame of a one-function program zeroes only what some path reads
// before writing it; programs with calls get the full frame.
func TestFrame(t *testing.T) {
	for _, tc := range []struct {
		src   string
		full  bool
		calls bool
		stack bool
		zero  string
	}{
		{"mov %r0, 1\nexit", false, false, false, ""},
		{"add %r0, %r3\nexit", false, false, false, "r0 r3"},
		{"jeq %r1, 0, +1\nmov %r6, 1\nmov %r0, %r6\nexit", false, false, false, "r6"},
		{"mov %r6, 1\njeq %r1, 0, +1\nmov %r6, 2\nmov %r0, %r6\nexit", false, false, false, ""},
		{"stdw [%r10-8], 1\ncall 1\nexit", false, true, true, "r3 r4 r5"}, // helpers see r1-r5
		{"call local f\nexit\nf:\nmov %r0, 1\nexit", true, true, true, "r0 r3 r4 r5 r6 r7 r8 r9"},
	} {
		a, err := analyze(t, tc.src, nil, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		fr := a.Frame()
		if fr.Full != tc.full || fr.Calls != tc.calls || fr.UsesStack() != tc.stack || regs(fr.Zero) != tc.zero {
			t.Errorf("%q: Frame = full %v calls %v stack %v zero %q; want %v %v %v %q",
				tc.src, fr.Full, fr.Calls, fr.UsesStack(), regs(fr.Zero), tc.full, tc.calls, tc.stack, tc.zero)
		}
	}
}

// Loads from a frozen read-only array are folded; the lddw is dropped when
// only folded loads read its register.
func TestFold(t *testing.T) {
	vals := []uint64{0x1122334455667788, 0xfedcba9876543210}
	m := vm.MapRef{Name: ".rodata", Type: 2, KeySize: 4, ValueSize: 16, MaxEntries: 1,
		ArrayBase: uintptr(unsafe.Pointer(&vals[0])), ArrayStride: 16, Frozen: true, ReadOnly: true}
	const src = "lddw %r1, map_value(0)+8\nldxw %r0, [%r1+0]\nldxsb %r2, [%r1+7]\nexit"
	a, err := analyze(t, src, []vm.MapRef{m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Folded[2] || a.FoldVal[2] != 0x76543210 || !a.Folded[3] || a.FoldVal[3] != 0xffffffff_fffffffe || !a.DropLd[0] {
		t.Errorf("folded %v %#x, dropped %v", a.Folded, a.FoldVal, a.DropLd)
	}
	m.Frozen = false
	if a, _ = analyze(t, src, []vm.MapRef{m}, nil); a.Folded != nil || a.DropLd != nil {
		t.Errorf("a writable map folded: %v %v", a.Folded, a.DropLd)
	}
}

// Analyze refuses what no backend can compile, with vm.ErrInvalidProgram.
func TestAnalyzeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		table     vm.HelperTable
		msg       string
	}{
		{"structure", "ja +5\nexit", nil, "outside the program"},
		{"helper without address", "exit", vm.HelperTable{9: {ID: 9}}, "no address"},
		{"helper under another id", "exit", vm.HelperTable{9: {ID: 8, Addr: 1}}, "holds helper 8"},
		{"callx id beyond the table", "mov %r2, 1\ncall %r2\nexit", vm.HelperTable{MaxCallxID: {ID: MaxCallxID, Addr: 1}}, "callx needs helper ids"},
	} {
		_, err := analyze(t, tc.src, nil, tc.table)
		if !errors.Is(err, vm.ErrInvalidProgram) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		}
	}
	if _, err := Analyze(&vm.Program{}); !errors.Is(err, vm.ErrInvalidProgram) {
		t.Errorf("empty program: %v", err)
	}
	a, err := analyze(t, "mov %r2, 1\ncall %r2\ncall 3\nexit", nil, vm.HelperTable{3: {ID: 3, Addr: 0x1000}, 1: {ID: 1, Addr: 0x2000}})
	if err != nil {
		t.Fatal(err)
	}
	if a.TableLen != 4 || len(a.HelperIDs) != 2 || a.HelperIDs[0] != 1 || a.NearHint() != 0x1000 {
		t.Errorf("table %d ids %v near %#x", a.TableLen, a.HelperIDs, a.NearHint())
	}
	if _, err := a.Helper(2); err != nil {
		t.Errorf("Helper(2): %v", err)
	}
}

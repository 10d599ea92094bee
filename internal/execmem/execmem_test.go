package execmem

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// perms returns the permission string of the mapping holding addr, from /proc/self/maps.
func perms(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		lo, hi, _ := strings.Cut(fields[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		if uint64(addr) >= l && uint64(addr) < h {
			return fields[1]
		}
	}
	return "unmapped"
}

func TestReserveSealFree(t *testing.T) {
	code := []byte{0x31, 0xc0, 0xc3} // xor eax,eax; ret
	b, err := Reserve(3*pageSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := b.Addr()
	if got := perms(t, a); got != "rw-p" {
		t.Fatalf("reserved block perms = %q, want rw-p", got)
	}
	if err := b.Seal(code); err != nil {
		t.Fatal(err)
	}
	if got := perms(t, a); got != "r-xp" {
		t.Fatalf("sealed block perms = %q, want r-xp", got)
	}
	if got := perms(t, a+uintptr(pageSize)); got == "rw-p" || got == "r-xp" && b.Cap() > pageSize {
		t.Fatalf("unused tail still mapped (%q), cap %d", got, b.Cap())
	}
	if got := string(b.Code()); got != string(code) || b.Len() != 3 {
		t.Fatalf("Code() = % x, Len %d", got, b.Len())
	}
	if err := b.Seal(code); !errors.Is(err, ErrSealed) {
		t.Fatalf("second Seal = %v, want ErrSealed", err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if got := perms(t, a); got == "r-xp" {
		t.Fatalf("freed block still mapped r-x")
	}
	if err := b.Free(); !errors.Is(err, ErrFreed) {
		t.Fatalf("second Free = %v, want ErrFreed", err)
	}
	if b.Addr() != 0 || b.Code() != nil {
		t.Fatal("freed block still reports memory")
	}
}

func TestSealedCodeIsNotWritable(t *testing.T) {
	b, err := New([]byte{0xc3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	faulted := func() (f bool) {
		defer func() { f = recover() != nil }()
		b.mem[0] = 0x90
		return false
	}()
	if !faulted {
		t.Fatal("write to sealed code did not fault")
	}
}

func TestReserveNear(t *testing.T) {
	near := uintptr(0x7f0000000000)
	if testing.Short() {
		near = 0
	}
	b, err := Reserve(100, near)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if b.Cap() != pageSize {
		t.Fatalf("Cap = %d, want one page", b.Cap())
	}
	// The hint is advisory; report where it landed for the record.
	t.Logf("near %#x → %#x (rel32 reachable: %v)", near, b.Addr(), Rel32Reachable(b.Addr(), near))
}

func TestErrors(t *testing.T) {
	if _, err := Reserve(0, 0); err == nil {
		t.Fatal("Reserve(0) succeeded")
	}
	b, err := Reserve(10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Seal(nil); err == nil {
		t.Fatal("Seal(nil) succeeded")
	}
	if err := b.Seal(make([]byte, pageSize+1)); err == nil {
		t.Fatal("Seal of oversize code succeeded")
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Seal([]byte{0xc3}); !errors.Is(err, ErrFreed) {
		t.Fatalf("Seal after Free = %v", err)
	}
}

func TestRel32Reachable(t *testing.T) {
	for _, tc := range []struct {
		from, to uintptr
		want     bool
	}{
		{0x1000, 0x1000 + 1<<31 - 1, true},
		{0x1000, 0x1000 + 1<<31, false},
		{1 << 40, 1<<40 - 1<<31, true},
		{1 << 40, 1<<40 - 1<<31 - 1, false},
	} {
		if got := Rel32Reachable(tc.from, tc.to); got != tc.want {
			t.Errorf("%s", fmt.Sprintf("Rel32Reachable(%#x, %#x) = %v", tc.from, tc.to, got))
		}
	}
}

package loopbench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildAndLoop builds a small C function with each compiler found and
// calls it from the loop.
func TestBuildAndLoop(t *testing.T) {
	ccs := Compilers()
	if len(ccs) == 0 {
		t.Skip("no C compiler in PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "f.c")
	code := "#include <stdint.h>\nuint64_t f(void *m, uint64_t n) { return n + *(unsigned char *)m; }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cc := range ccs {
		so, err := Build(cc, src, dir)
		if err != nil {
			t.Fatal(err)
		}
		lib, err := Open(so)
		if err != nil {
			t.Fatal(err)
		}
		fn, err := lib.Func("f")
		if err != nil {
			t.Fatal(err)
		}
		if got := Loop(fn, []byte{5, 0, 0}, 4); got != 4*(3+5) {
			t.Errorf("%s: 4 calls sum to %d, want 32", cc, got)
		}
		if _, err := lib.Func("missing"); err == nil || !strings.Contains(err.Error(), `"missing"`) {
			t.Errorf("%s: missing function: %v", cc, err)
		}
		if err := lib.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestErrors: a C file that does not compile, a library that is not there
// and a program that is not whole instructions are refused with the reason.
func TestErrors(t *testing.T) {
	ccs := Compilers()
	if len(ccs) == 0 {
		t.Skip("no C compiler in PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "bad.c")
	if err := os.WriteFile(src, []byte("int f( {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(ccs[0], src, dir); err == nil || !strings.Contains(err.Error(), "bad.c") {
		t.Errorf("broken C: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "none.so")); err == nil || !strings.Contains(err.Error(), "none.so") {
		t.Errorf("missing library: %v", err)
	}
	if _, err := OpenUBPF(filepath.Join(dir, "none.so"), make([]byte, 7)); err == nil || !strings.Contains(err.Error(), "7 bytes") {
		t.Errorf("7-byte program: %v", err)
	}
	if _, err := OpenUBPF(filepath.Join(dir, "none.so"), make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "none.so") {
		t.Errorf("missing uBPF: %v", err)
	}
}

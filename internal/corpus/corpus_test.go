package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how Dir ended the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Name() string              { return "TestX" }
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...) }
func (r *recorder) Skipf(f string, a ...any)  { r.skip = fmt.Sprintf(f, a...) }

// TestDir: a corpus found is returned; a missing one skips with one line
// naming the test and the folder, or fails when NCCLBPF_REQUIRE_CONFORMANCE
// asks for it (any value not understood too) or NCCLBPF_CONFORMANCE_DIR
// names a folder without one.
func TestDir(t *testing.T) {
	root := t.TempDir()
	t.Setenv("NCCLBPF_CONFORMANCE_DIR", "")
	t.Setenv("NCCLBPF_REQUIRE_CONFORMANCE", "")
	r := &recorder{TB: t}
	if Dir(r, root); r.fatal != "" || !strings.HasPrefix(r.skip, SkipPrefix+" TestX: nothing at ") ||
		!strings.Contains(r.skip, filepath.Join(filepath.Dir(root), "shared", "conformance", "bpf_conformance")) {
		t.Errorf("missing, optional: fatal %q skip %q", r.fatal, r.skip)
	}
	for _, v := range []string{"1", "yes", "sure"} {
		t.Setenv("NCCLBPF_REQUIRE_CONFORMANCE", v)
		r = &recorder{TB: t}
		if Dir(r, root); r.skip != "" || !strings.HasPrefix(r.fatal, "CONFORMANCE CORPUS MISSING") {
			t.Errorf("missing, NCCLBPF_REQUIRE_CONFORMANCE=%s: fatal %q skip %q", v, r.fatal, r.skip)
		}
	}
	t.Setenv("NCCLBPF_REQUIRE_CONFORMANCE", "0")
	named := t.TempDir()
	t.Setenv("NCCLBPF_CONFORMANCE_DIR", named)
	r = &recorder{TB: t}
	if Dir(r, root); r.skip != "" || !strings.Contains(r.fatal, named) {
		t.Errorf("named folder without a corpus: fatal %q skip %q", r.fatal, r.skip)
	}
	if err := os.WriteFile(filepath.Join(named, "a.data"), []byte("-- asm\nexit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = &recorder{TB: t}
	if got := Dir(r, root); got != named || r.fatal != "" || r.skip != "" {
		t.Errorf("corpus present: %q, fatal %q skip %q", got, r.fatal, r.skip)
	}
}

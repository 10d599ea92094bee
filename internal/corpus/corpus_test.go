package corpus

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
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
	t.Setenv(envconfig.ConformanceDir, "")
	t.Setenv(envconfig.RequireConformance, "")
	r := &recorder{TB: t}
	if Dir(r, root); r.fatal != "" || !strings.HasPrefix(r.skip, SkipPrefix+" TestX: nothing at ") ||
		!strings.Contains(r.skip, filepath.Join(filepath.Dir(root), "shared", "conformance", "bpf_conformance")) {
		t.Errorf("missing, optional: fatal %q skip %q", r.fatal, r.skip)
	}
	for _, v := range []string{"1", "yes", "sure"} {
		t.Setenv(envconfig.RequireConformance, v)
		r = &recorder{TB: t}
		if Dir(r, root); r.skip != "" || !strings.HasPrefix(r.fatal, "CONFORMANCE CORPUS MISSING") {
			t.Errorf("missing, NCCLBPF_REQUIRE_CONFORMANCE=%s: fatal %q skip %q", v, r.fatal, r.skip)
		}
	}
	t.Setenv(envconfig.RequireConformance, "0")
	named := t.TempDir()
	t.Setenv(envconfig.ConformanceDir, named)
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

// TestSkipListCoversEveryCaller: scripts/corpus-skips.sh finds the corpus
// tests by their direct calls of corpus.Dir; every call of it in the
// repository's tests is directly inside a top-level Test function, and the
// script lists exactly those, so that each test skipped without the corpus
// gets its line.
func TestSkipListCoversEveryCaller(t *testing.T) {
	root := filepath.Join("..", "..")
	want := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || filepath.Base(filepath.Dir(path)) == "corpus" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, isIdent := sel.X.(*ast.Ident); isIdent && x.Name == "corpus" && sel.Sel.Name == "Dir" {
					rel, _ := filepath.Rel(root, filepath.Dir(path))
					if !strings.HasPrefix(fn.Name.Name, "Test") || fn.Recv != nil {
						t.Errorf("%s: corpus.Dir is called from %s, not a Test function: scripts/corpus-skips.sh would miss it", path, fn.Name.Name)
					}
					want["./"+filepath.ToSlash(rel)+" "+fn.Name.Name] = true
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no test calls corpus.Dir")
	}
	out, err := exec.Command(filepath.Join(root, "scripts", "corpus-skips.sh"), "--list").Output()
	if err != nil {
		t.Fatalf("corpus-skips.sh --list: %v", err)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		got[l] = true
	}
	for w := range want {
		if !got[w] {
			t.Errorf("corpus-skips.sh does not list %s", w)
		}
	}
	for g := range got {
		if !want[g] {
			t.Errorf("corpus-skips.sh lists %s, which does not call corpus.Dir", g)
		}
	}
}

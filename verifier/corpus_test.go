package verifier_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/verifier"
)

var annotRE = regexp.MustCompile(`ERROR (E\d{3})`)

// warnRE marks the line where an accepted program must get a warning.
var warnRE = regexp.MustCompile(`WARNING (W\d{3})`)

// annotations returns line number -> expected code for a source file.
func annotations(t *testing.T, path string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for i, l := range strings.Split(string(b), "\n") {
		if m := annotRE.FindStringSubmatch(l); m != nil {
			out[i+1] = m[1]
		}
	}
	return out
}

// warningAnnotations returns the WARNING annotations of a C source by line.
func warningAnnotations(t *testing.T, path string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for i, l := range strings.Split(string(b), "\n") {
		if m := warnRE.FindStringSubmatch(l); m != nil {
			out[i+1] = m[1]
		}
	}
	return out
}

func configFor(t *testing.T, c *loader.CollectionSpec, p *loader.ProgramSpec) *verifier.Config {
	h, err := hook.ForSection(p.Section)
	if err != nil {
		t.Fatal(err)
	}
	return verifier.ForProgram(c, p, h)
}

// corpusStats counts verdicts across the C and assembly corpora.
type corpusStats struct {
	rejected map[verifier.Code]int
	accepted int
}

var stats = corpusStats{rejected: map[verifier.Code]int{}}

// TestCorpusC verifies every program of testdata/verifier/*.o against the
// ERROR annotations of its C source.
func TestCorpusC(t *testing.T) {
	corpusRan["c"] = true
	objs, _ := filepath.Glob("../testdata/verifier/*.o")
	if len(objs) == 0 {
		t.Fatal("no objects in testdata/verifier (run scripts/build-bpf.sh)")
	}
	for _, obj := range objs {
		src := strings.TrimSuffix(obj, ".o") + ".c"
		want := annotations(t, src)
		wantWarn := warningAnnotations(t, src)
		hit := map[int]string{}
		warnHit := map[int]bool{}
		coll, err := loader.LoadFile(obj)
		if err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		// the programs of one file are verified together, as a bundle
		// (a map one of them writes is rank-local for all), each with a
		// budget of its own: the file is a corpus of independent cases
		units := make([]verifier.Unit, len(coll.Programs))
		for i, p := range coll.Programs {
			units[i] = verifier.Unit{Insns: p.Insns, Config: *configFor(t, coll, p)}
			units[i].Config.Budget = verifier.NewBudget(units[i].Config.Complexity)
		}
		results, errs, _ := verifier.VerifyTogether(coll.Maps, units)
		for i, p := range coll.Programs {
			name := filepath.Base(src) + ":" + p.Name
			res, err := results[i], errs[i]
			var ve *verifier.Error
			switch {
			case strings.HasPrefix(p.Name, "ok_"):
				if err != nil {
					t.Errorf("%s: rejected, want accepted:\n%v", name, explain(err))
					continue
				}
				stats.accepted++
				// a warning is expected exactly where a WARNING annotation is
				for _, w := range res.Warnings {
					if code, ok := wantWarn[w.Line]; !ok || code != w.Code.String()[:4] {
						t.Errorf("%s: warning at line %d, which has no WARNING %s annotation:\n%s", name, w.Line, w.Code.String()[:4], w.Explain())
						continue
					}
					warnHit[w.Line] = true
				}
			case strings.HasPrefix(p.Name, "bad_"):
				if !errors.As(err, &ve) {
					t.Errorf("%s: accepted (err=%v), want rejected", name, err)
					continue
				}
				code, ok := want[ve.Line]
				switch {
				case !ok:
					t.Errorf("%s: rejected at line %d, which has no ERROR annotation:\n%s", name, ve.Line, ve.Explain())
				case code != ve.Code.String()[:4]:
					t.Errorf("%s: rejected with %v at line %d, want %s:\n%s", name, ve.Code, ve.Line, code, ve.Explain())
				case hit[ve.Line] != "":
					t.Errorf("%s: line %d already matched by %s", name, ve.Line, hit[ve.Line])
				default:
					hit[ve.Line] = p.Name
					stats.rejected[ve.Code]++
				}
			default:
				t.Errorf("%s: program names must start with ok_ or bad_", name)
			}
		}
		for line, code := range want {
			if hit[line] == "" {
				t.Errorf("%s:%d: annotation %s matched by no program", src, line, code)
			}
		}
		for line, code := range wantWarn {
			if !warnHit[line] {
				t.Errorf("%s:%d: WARNING %s annotation matched by no accepted program's warning", src, line, code)
			}
		}
	}
}

func explain(err error) string {
	var ve *verifier.Error
	if errors.As(err, &ve) {
		return ve.Explain()
	}
	return err.Error()
}

// TestCorpusSize runs last (go test runs tests in source order) and checks
// the corpus's size: at least 60 rejected programs over at least 15
// codes, at least 25 accepted programs.
func TestCorpusSize(t *testing.T) {
	total := 0
	var lines []string
	for c, n := range stats.rejected {
		total += n
		lines = append(lines, c.String()+": "+itoa(n))
	}
	sort.Strings(lines)
	t.Logf("rejected %d programs over %d codes, accepted %d:\n%s", total, len(stats.rejected), stats.accepted, strings.Join(lines, "\n"))
	if !corpusRan["c"] || !corpusRan["asm"] {
		return
	}
	if total < 60 || len(stats.rejected) < 15 || stats.accepted < 25 {
		t.Errorf("corpus too small: %d rejected over %d codes, %d accepted", total, len(stats.rejected), stats.accepted)
	}
}

// corpusRan is set when both corpus tests ran (not with -run filters).
var corpusRan = map[string]bool{}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}

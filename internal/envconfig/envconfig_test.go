package envconfig

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/environment.md from Vars")

// TestDocs: docs/environment.md is the table Markdown renders.
func TestDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "environment.md")
	want := Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it: go test ./internal/envconfig -run TestDocs -update)", err)
	}
	if string(got) != want {
		t.Errorf("docs/environment.md is not what envconfig.Vars renders: run go test ./internal/envconfig -run TestDocs -update")
	}
	// The user's list holds no test-only variable: those have their own section.
	users, tests, ok := strings.Cut(string(got), "\n## For the project's tests only\n")
	if !ok {
		t.Fatal("docs/environment.md has no section for the tests' variables")
	}
	for _, v := range all() {
		row := "| `" + v.Name + "` |"
		if inUsers := strings.Contains(users, row); inUsers == (v.Reader == Tests) || strings.Contains(tests, row) != (v.Reader == Tests) {
			t.Errorf("%s (read by %s) is in the wrong list of docs/environment.md", v.Name, v.Reader)
		}
	}
}

// all is Vars then TestVars.
func all() []Var { return append(append([]Var(nil), Vars...), TestVars...) }

// TestScopes: Vars holds what a job or a user sets, TestVars the tests'
// knobs only, and no name is in both.
func TestScopes(t *testing.T) {
	for _, v := range Vars {
		if v.Reader == Tests {
			t.Errorf("%s is read by the tests only: it belongs in TestVars", v.Name)
		}
	}
	for _, v := range TestVars {
		if v.Reader != Tests {
			t.Errorf("%s is read by the %s: it belongs in Vars", v.Name, v.Reader)
		}
	}
	seen := map[string]bool{}
	for _, v := range all() {
		if seen[v.Name] {
			t.Errorf("%s is listed twice", v.Name)
		}
		seen[v.Name] = true
	}
}

// reads matches the places a source file names an NCCLBPF_* variable: a
// string "NAME" or "NAME=value" (getenv calls, constants, environments of
// child processes) and shell expansions.
var reads = regexp.MustCompile(`"(NCCLBPF_[A-Z0-9_]+)[="]|\$\{?(NCCLBPF_[A-Z0-9_]+)`)

// TestEveryVariableListed: every variable a tracked source file reads is
// in Vars or TestVars, and every variable listed is read somewhere.
func TestEveryVariableListed(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "*.go", "*.c", "*.h", "*.sh").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the check needs a git checkout)", err)
	}
	self, err := os.ReadFile("envconfig.go")
	if err != nil {
		t.Fatal(err)
	}
	constOf := map[string]string{} // Go constant -> variable
	for _, m := range regexp.MustCompile(`(?m)^\t(\w+)\s*=\s*"((?:NCCLBPF|NCCL_TUNER)_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(self), -1) {
		constOf[m[1]] = m[2]
	}
	seen := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "internal/envconfig/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range reads.FindAllStringSubmatch(string(src), -1) {
			name := m[1] + m[2]
			seen[name] = true
			if Lookup(name) == nil {
				t.Errorf("%s reads %s, which neither envconfig.Vars nor TestVars lists", f, name)
			}
		}
		for _, m := range regexp.MustCompile(`envconfig\.(\w+)`).FindAllStringSubmatch(string(src), -1) {
			if name, ok := constOf[m[1]]; ok {
				seen[name] = true
			}
		}
	}
	for _, v := range all() {
		if !seen[v.Name] {
			t.Errorf("%s is listed but no source file reads it", v.Name)
		}
		if v.Doc == "" || v.Default == "" || v.Values == "" || v.Reader == "" {
			t.Errorf("%s: every field of its Var must be filled: %+v", v.Name, v)
		}
	}
}

func TestParsers(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "TRUE": true, "yes": true, " on ": true, "": false, "0": false, "false": false, "No": false, "off": false} {
		if got, err := ParseStrict(v); got != want || err != nil {
			t.Errorf("ParseStrict(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	if got, err := ParseStrict("2"); !got || err == nil || !strings.Contains(err.Error(), `NCCLBPF_STRICT="2"`) {
		t.Errorf("ParseStrict(2) = %v, %v; want strict with an error naming the value", got, err)
	}
	if on, w := ParseSwitch(Watch, "yes"); !on || w != "" {
		t.Errorf("ParseSwitch yes = %v %q", on, w)
	}
	if on, w := ParseSwitch(Watch, "maybe"); on || !strings.Contains(w, Watch) {
		t.Errorf("ParseSwitch maybe = %v %q, want off with a warning", on, w)
	}
	if d, w := ParseWatchInterval("250ms"); d != 250*time.Millisecond || w != "" {
		t.Errorf("ParseWatchInterval 250ms = %v %q", d, w)
	}
	if d, w := ParseWatchInterval("1ms"); d != time.Second || w == "" {
		t.Errorf("ParseWatchInterval 1ms = %v %q, want 1s with a warning", d, w)
	}
	if n, w := ParseGoMaxProcs("4"); n != 4 || w != "" {
		t.Errorf("ParseGoMaxProcs 4 = %d %q", n, w)
	}
	if n, w := ParseGoMaxProcs("0"); n != DefaultGoMaxProcs || w == "" {
		t.Errorf("ParseGoMaxProcs 0 = %d %q, want the default with a warning", n, w)
	}
	for v, want := range map[string]ControlMode{"": ControlOn, "0": ControlOff, "ro": ControlReadOnly, "bogus": ControlReadOnly} {
		if m, _ := ParseControl(v); m != want {
			t.Errorf("ParseControl %q = %v, want %v", v, m, want)
		}
	}
}

// TestDefaultsMatchReaders: the documented defaults are the ones the
// readers apply: the shim's env_u32 calls and the Go parsers.
func TestDefaultsMatchReaders(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "plugin", "profiler.c"))
	if err != nil {
		t.Fatal(err)
	}
	calls := regexp.MustCompile(`env_u32\("(NCCLBPF_[A-Z0-9_]+)", (\d+),`).FindAllStringSubmatch(string(src), -1)
	if len(calls) == 0 {
		t.Fatal("no env_u32 call found in plugin/profiler.c")
	}
	for _, m := range calls {
		v := Lookup(m[1])
		if v == nil {
			t.Errorf("plugin/profiler.c reads %s, which Vars does not list", m[1])
			continue
		}
		if v.Default != "`"+m[2]+"`" {
			t.Errorf("%s: documented default %s, the shim uses %s", m[1], v.Default, m[2])
		}
	}
	if n, _ := ParseGoMaxProcs(""); Lookup(GoMaxProcs).Default != fmt.Sprintf("`%d`", n) {
		t.Errorf("%s: documented default %s, the parser gives %d", GoMaxProcs, Lookup(GoMaxProcs).Default, n)
	}
	if d, _ := ParseWatchInterval(""); Lookup(WatchInterval).Default != "`"+d.String()+"`" {
		t.Errorf("%s: documented default %s, the parser gives %v", WatchInterval, Lookup(WatchInterval).Default, d)
	}
	if on, _ := ParseSwitch(Watch, ""); on || Lookup(Watch).Default != "`off`" {
		t.Errorf("%s: documented default %s, the parser gives on=%v", Watch, Lookup(Watch).Default, on)
	}
	if m, _ := ParseControl(""); Lookup(Control).Default != "`"+m.String()+"`" {
		t.Errorf("%s: documented default %s, the parser gives %v", Control, Lookup(Control).Default, m)
	}
}

// literal is a Go string literal that spells a variable's name, alone or
// before "=" (a getenv argument, an entry of a child's environment).
var literal = regexp.MustCompile(`"(NCCLBPF_[A-Z0-9_]+)(=[^"%]*)?"`)

// literalsLeft are the folders whose Go files still spell names.
var literalsLeft = []string{"control/", "verifier/"}

// TestConstantsNotLiterals: Go code outside this package names a variable
// through its constant (envconfig.Policy, not "NCCLBPF_POLICY"), so that
// a renamed or removed variable fails to compile rather than goes unread.
// Messages that quote a variable with a format verb are left alone.
func TestConstantsNotLiterals(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the check needs a git checkout)", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "internal/envconfig/") || slices.ContainsFunc(literalsLeft, func(p string) bool { return strings.HasPrefix(f, p) }) {
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "//") {
				continue
			}
			if m := literal.FindStringSubmatch(l); m != nil {
				t.Errorf("%s:%d spells %s: use its envconfig constant", f, i+1, m[1])
			}
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/ctl"
	"github.com/ncclbpf/ncclbpf/internal/disasm"
	"github.com/ncclbpf/ncclbpf/internal/offline"
)

// TestJSONOutputs: every command that prints data has --json, and what it
// prints is one JSON document of the expected shape, written without HTML
// escapes (a path with & < > stays readable). (Mutation: dropping
// SetEscapeHTML(false) from writeJSON fails the run and map dump cases.)
func TestJSONOutputs(t *testing.T) {
	dir, _ := startFake(t)
	pid := itoa(os.Getpid())
	odd := filepath.Join(t.TempDir(), "a&b<c>.bpf.o")
	obj, err := os.ReadFile(sizeAwareObj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(odd, obj, 0o644); err != nil {
		t.Fatal(err)
	}
	s := writeFile(t, t.TempDir(), "p.s", "lddw %r0, 0x1122334455667788\nexit\n")
	data := writeFile(t, t.TempDir(), "t.data", "-- asm\nmov %r0, 1\nexit\n-- result\n0x1\n")
	reloadObj := filepath.Join("..", "..", "testhost", "reload_b.bpf.o")
	spec, err := control.ParseReduce("sum", "u64", 8)
	if err != nil {
		t.Fatal(err)
	}
	partA, partB, all := filepath.Join(t.TempDir(), "a.json"), filepath.Join(t.TempDir(), "b.json"), filepath.Join(t.TempDir(), "all.json")
	for _, p := range []string{partA, partB} {
		if err := control.NewPartial("local", 4, 8, spec).WriteFile(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args  []string
		into  any
		check func(v any) bool
		raw   string // must appear verbatim
	}{
		{args: []string{"verify", "--json", sizeAwareObj}, into: &[]offline.VerifyReport{},
			check: func(v any) bool {
				r := *v.(*[]offline.VerifyReport)
				return len(r) == 1 && r[0].OK && r[0].Hook == "tuner"
			}},
		{args: []string{"run", "--json", odd, "--bytes", "4MiB"}, into: &jsonReport{}, raw: `"object": "` + odd + `"`,
			check: func(v any) bool { return v.(*jsonReport).Verified && v.(*jsonReport).Hook == "tuner" }},
		{args: []string{"disasm", "--json", sizeAwareObj}, into: &[]disasm.Program{},
			check: func(v any) bool {
				p := *v.(*[]disasm.Program)
				return len(p) == 1 && p[0].Section == "tuner" && len(p[0].Insns) > 10 && p[0].Insns[0].Line > 0 && p[0].Insns[0].Function != ""
			}},
		{args: []string{"asm", "--json", s}, into: &[]asmInsn{},
			check: func(v any) bool {
				p := *v.(*[]asmInsn)
				return len(p) == 2 && len(p[0].Words) == 2 && p[1].PC == 2 && p[1].Text == "exit"
			}},
		{args: []string{"conformance", "--json", "--engine", "interp", data}, into: &[]conformanceResult{},
			check: func(v any) bool {
				p := *v.(*[]conformanceResult)
				return len(p) == 1 && p[0].Passed && p[0].Engine == "interp"
			}},
		{args: []string{"ps", "--json", "--dir", dir}, into: &[]map[string]any{},
			check: func(v any) bool { p := *v.(*[]map[string]any); return len(p) == 1 && p[0]["policy"] == "/p/a.bpf.o" }},
		{args: []string{"stats", "--json", "--dir", dir, pid}, into: &map[string]any{},
			check: func(v any) bool { _, ok := (*v.(*map[string]any))["tuner"]; return ok }},
		{args: []string{"map", "list", "--json", "--dir", dir, pid}, into: &[]map[string]any{},
			check: func(v any) bool { p := *v.(*[]map[string]any); return len(p) == 1 && p[0]["name"] == "hits" }},
		{args: []string{"map", "dump", "--json", "--dir", dir, pid, "hits"}, into: &map[string]any{}, raw: `"hits<&>"`,
			check: func(v any) bool { return (*v.(*map[string]any))["name"] == "hits<&>" }},
		{args: []string{"check", "--json", "--dir", dir}, into: &[]ctl.CheckResult{},
			check: func(v any) bool {
				p := *v.(*[]ctl.CheckResult)
				return len(p) == 1 && p[0].CommID == "0x5e5e" && !p[0].Compared
			}},
		{args: []string{"agree", "--json", "--combine", "-o", all, partA, partB}, into: &map[string]any{},
			check: func(v any) bool { m := *v.(*map[string]any); return m["output"] == all && m["keys"] == 0.0 }},
		{args: []string{"reload", "--json", "--dir", dir, pid, reloadObj}, into: &[]map[string]any{},
			check: func(v any) bool { p := *v.(*[]map[string]any); return len(p) == 1 && p[0]["pid"] == pid }},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		if code != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr)
			continue
		}
		dec := json.NewDecoder(strings.NewReader(stdout))
		if err := dec.Decode(tc.into); err != nil || dec.More() {
			t.Errorf("%q: not one JSON document (%v):\n%s", tc.args, err, stdout)
			continue
		}
		if !tc.check(tc.into) {
			t.Errorf("%q: unexpected content:\n%s", tc.args, stdout)
		}
		if tc.raw != "" && !strings.Contains(stdout, tc.raw) {
			t.Errorf("%q: output lacks %s verbatim (HTML-escaped?):\n%s", tc.args, tc.raw, stdout)
		}
	}
}

func TestUnescapeHTML(t *testing.T) {
	in := `{"a":"\u003cx\u003e \u0026 \\u003c \"q\"","b":"\u00e9"}`
	want := `{"a":"<x> & \\u003c \"q\"","b":"\u00e9"}`
	if got := string(unescapeHTML([]byte(in))); got != want {
		t.Errorf("unescapeHTML:\n got %s\nwant %s", got, want)
	}
	var a, b any
	if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		t.Fatal("not JSON")
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("unescaping changed the value: %s vs %s", ja, jb)
	}
}

package loader_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/loader"
)

// TestNoDebugInfo: an object built without -g that needs BTF says to
// rebuild it with -g and how; one that loads says it has no source lines.
func TestNoDebugInfo(t *testing.T) {
	_, err := loader.LoadFile(filepath.Join(testdata, "nodebug_map.o"))
	if err == nil || !strings.Contains(err.Error(), "built without -g; rebuild it with -g: "+
		"clang-19 -target bpf -mcpu=v3 -O2 -g -I include -c policy.bpf.c -o policy.bpf.o") {
		t.Errorf("a map and no BTF: %v", err)
	}
	if c := mustLoad(t, "nodebug_unsafe.o"); c.Programs[0].HasLineInfo() {
		t.Error("nodebug_unsafe.o: line information found in an object built with -g0")
	}
	if c := mustLoad(t, "policy.o"); !c.Programs[0].HasLineInfo() {
		t.Error("policy.o: no line information in an object built with -g")
	}
	// The command is the README's.
	readme, err := os.ReadFile("../README.md")
	cmd := loader.NoDebugInfoHint[strings.Index(loader.NoDebugInfoHint, "clang-19"):]
	if err != nil || !strings.Contains(string(readme), "    "+cmd+"\n") {
		t.Errorf("README.md does not show the build command %q (%v)", cmd, err)
	}
}

// TestContextType: the struct each entry function's parameter points to,
// from BTF, a forward declaration included.
func TestContextType(t *testing.T) {
	c := mustLoad(t, "wrong_ctx.o")
	want := map[string]string{
		"profiler_ctx_in_tuner": "ncclbpf_prof_ctx",
		"misspelt_ctx":          "ncclbpf_profiler_ctx",
		"right_ctx":             "ncclbpf_tuner_ctx",
	}
	for _, p := range c.Programs {
		if p.ContextType != want[p.Name] {
			t.Errorf("%s: context type %q, want %q", p.Name, p.ContextType, want[p.Name])
		}
	}
	if got := mustLoad(t, "policy.o").Programs[0].ContextType; got != "ctx" {
		t.Errorf("policy.o: context type %q, want ctx", got)
	}
	if got := mustLoad(t, "nodebug_unsafe.o").Programs[0].ContextType; got != "" {
		t.Errorf("no BTF: context type %q, want none", got)
	}
}

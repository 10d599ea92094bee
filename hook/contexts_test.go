package hook

import (
	"bytes"
	"os"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/ctxgen"
)

// TestContextsGenerated regenerates the contexts' description from the
// headers (clang-19, BTF) and fails when the committed zz_contexts.go
// differs: a header changed without `go generate ./hook`, or the other way
// round.
func TestContextsGenerated(t *testing.T) {
	want, err := ctxgen.Generate("../include", "hook", ctxgen.Contexts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zz_contexts.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("hook/zz_contexts.go is not what include/*.h give; run `go generate ./hook`. Generated:\n%s", want)
	}
}

// TestContextsRegistered: every hook's context is one of the generated
// descriptions (by value), so that no hand-written layout is left.
func TestContextsRegistered(t *testing.T) {
	gen := map[string]*Context{}
	for _, c := range []*Context{&TunerContext, &ChunkContext, &ProfilerContext, &NetContext} {
		gen[c.Name] = c
	}
	for _, h := range All() {
		g := gen[h.Context.Name]
		if g == nil {
			t.Errorf("hook %s: context %s is not generated from the headers", h.Name, h.Context.Name)
			continue
		}
		if h.Context.Size != g.Size || len(h.Context.Fields) != len(g.Fields) || &h.Context.Fields[0] != &g.Fields[0] {
			t.Errorf("hook %s: context %s is not the generated description", h.Name, h.Context.Name)
		}
	}
}

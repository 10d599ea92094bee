package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/corpus"
)

func TestDisasmJIT(t *testing.T) {
	obj := filepath.Join("..", "..", "testdata", "loader", "policy.o")
	code, stdout, stderr := runCLI("disasm", "--jit", obj, "--section", "profiler/coll_end")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"# section \"profiler/coll_end\", program on_coll_end:",
		"; prologue\n", "push rbp",
		"0: ", "call ", "ret",
		"; out of line",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("disasm --jit output lacks %q:\n%s", want, stdout)
		}
	}
	// Without --jit the command is the plain disassembler.
	if code, stdout, _ := runCLI("disasm", obj, "--section", "profiler/coll_end"); code != 0 || strings.Contains(stdout, "push rbp") {
		t.Errorf("disasm without --jit: exit %d, native code shown", code)
	}
	if code, _, stderr := runCLI("disasm", "--jit", obj, "--section", "nope"); code != 1 || !strings.Contains(stderr, "no program") {
		t.Errorf("unknown section: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI("disasm", "--jit"); code != 2 {
		t.Errorf("no FILE: exit %d, want 2", code)
	}
}

func TestJITEngineRegistered(t *testing.T) {
	e, err := newEngine("jit")
	if err != nil || e.Name() != "jit" {
		t.Fatalf("newEngine(jit) = %v, %v", e, err)
	}
	dir := corpus.Dir(t, filepath.Join("..", ".."))
	code, stdout, stderr := runCLI("conformance", "--engine", "jit", filepath.Join(dir, "callx.data"))
	if code != 0 || !strings.Contains(stdout, "1 passed, 0 failed") {
		t.Errorf("conformance --engine jit: exit %d\n%s%s", code, stdout, stderr)
	}
}

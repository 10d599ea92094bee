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

// TestDisasmJITArch: --arch shows either architecture's code on any host;
// it needs --jit and a known architecture.
func TestDisasmJITArch(t *testing.T) {
	obj := filepath.Join("..", "..", "policies", "size_aware.bpf.o")
	for arch, want := range map[string]string{"arm64": "mov w7, #0x1", "amd64": "mov eax, 0x1"} {
		code, stdout, stderr := runCLI("disasm", "--jit", "--arch", arch, obj)
		if code != 0 || !strings.Contains(stdout, "0: mov32 %r0, 1") || !strings.Contains(stdout, want) {
			t.Errorf("--arch %s: exit %d, want %q in\n%s%s", arch, code, want, stdout, stderr)
		}
	}
	// The C source lines and function labels of disasm, before the same
	// instructions.
	for _, arch := range []string{"amd64", "arm64"} {
		code, stdout, _ := runCLI("disasm", "--jit", "--arch", arch, obj)
		want := "size_aware:\n# size_aware.bpf.c:17: int size_aware(struct ncclbpf_tuner_ctx *ctx)\n0: mov32 %r0, 1\n"
		if code != 0 || !strings.Contains(stdout, want) ||
			!strings.Contains(stdout, "# size_aware.bpf.c:19: if (ctx->coll_type != NCCLBPF_COLL_ALLREDUCE)\n1: ldxw %r2, [%r1+24]\n") {
			t.Errorf("disasm --jit --arch %s: exit %d, no source lines:\n%s", arch, code, stdout)
		}
	}
	for _, args := range [][]string{{"disasm", "--arch", "arm64", obj}, {"disasm", "--jit", "--arch", "riscv64", obj}} {
		if code, _, stderr := runCLI(args...); code != 2 || !strings.Contains(stderr, "--arch") {
			t.Errorf("%q: exit %d, %s; want a usage error naming --arch", args, code, stderr)
		}
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

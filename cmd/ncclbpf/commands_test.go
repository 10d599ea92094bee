package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"

	"github.com/ncclbpf/ncclbpf/internal/corpus"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// zz-fake is an engine for the CLI's tests only: r0 is the Imm of the
// program's first instruction.
func init() { registerEngine("zz-fake", func() vm.Engine { return fakeEngine{} }) }

type fakeEngine struct{}

func (fakeEngine) Name() string { return "zz-fake" }
func (fakeEngine) Compile(p *vm.Program) (vm.Executable, error) {
	return fakeExec(uint64(int64(p.Insns[0].Imm))), nil
}

type fakeExec uint64

func (x fakeExec) Run([]byte) (uint64, error) { return uint64(x), nil }
func (fakeExec) Close() error                 { return nil }

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformanceCommand(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "pass.data", "-- asm\nmov %r0, 1\nexit\n-- result\n0x1\n")
	writeFile(t, dir, "fail.data", "-- asm\nmov %r0, 2\nexit\n-- result\n0x1\n")
	code, stdout, stderr := runCLI("conformance", dir, "--engine", "zz-fake")
	want := "FAIL " + filepath.Join(dir, "fail.data") + ": r0 = 0x2, want 0x1\n1 passed, 1 failed\n"
	if code != 1 || stdout != want || stderr != "" {
		t.Errorf("conformance: exit %d, stdout %q, stderr %q; want 1, %q", code, stdout, stderr, want)
	}
	code, stdout, _ = runCLI("conformance", "-v", "--engine=zz-fake", filepath.Join(dir, "pass.data"))
	if code != 0 || stdout != "PASS "+filepath.Join(dir, "pass.data")+"\n1 passed, 0 failed\n" {
		t.Errorf("conformance -v pass.data: exit %d, stdout %q", code, stdout)
	}
	code, _, stderr = runCLI("conformance", "--engine", "nope", dir)
	if code != 2 || !strings.Contains(stderr, `ncclbpf conformance: unknown engine "nope"; engines: `) || !strings.Contains(stderr, "zz-fake") {
		t.Errorf("unknown engine: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCLI("conformance", "--engine", "zz-fake"); code != 2 {
		t.Errorf("no path: exit %d, want 2", code)
	}
	code, _, stderr = runCLI("conformance", "--engine", "zz-fake", filepath.Join(dir, "missing"))
	if code != 1 || strings.Count(stderr, "ncclbpf conformance: ") != 1 || !strings.Contains(stderr, "missing") {
		t.Errorf("missing folder: exit %d, stderr %q", code, stderr)
	}
}

func TestAsmDisasmCommands(t *testing.T) {
	dir := t.TempDir()
	src := "mov %r0, 0\nlddw %r1, 0x1122334455667788\njne %r1, 5, +1\nlock fetch add [%r10-8], %r1\nexit\n"
	s := writeFile(t, dir, "prog.s", src)
	bin := filepath.Join(dir, "prog.bin")
	if code, _, stderr := runCLI("asm", s, "-o", bin); code != 0 {
		t.Fatalf("asm -o: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := runCLI("disasm", "--plain", bin)
	if code != 0 || stdout != src {
		t.Errorf("disasm --plain: exit %d, stderr %q, got\n%s\nwant\n%s", code, stderr, stdout, src)
	}
	code, stdout, _ = runCLI("disasm", bin)
	for _, want := range []string{"0: mov %r0, 0\n", "1: lddw %r1, 0x1122334455667788\n", "3: jne %r1, 5, +1", "# -> 5\n", "4: lock fetch add [%r10-8], %r1\n", "5: exit\n"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("disasm: exit %d, output does not contain %q:\n%s", code, want, stdout)
		}
	}
	code, stdout, _ = runCLI("asm", s)
	insns, _ := asm.Assemble(src)
	if code != 0 || strings.Count(stdout, "\n") != len(insns) || !strings.HasPrefix(stdout, "0x00000000000000b7\n0x5566778800000118\n") {
		t.Errorf("asm: exit %d, stdout\n%s", code, stdout)
	}

	data := writeFile(t, dir, "t.data", "# test\n-- asm\nmov %r0, 1\ncall 5\nexit\n-- result\n1\n")
	code, stdout, _ = runCLI("disasm", data)
	if code != 0 || stdout != "0: mov %r0, 1\n1: call 5                           # bpf_ktime_get_ns\n2: exit\n" {
		t.Errorf("disasm .data: exit %d, stdout %q", code, stdout)
	}
	bad := writeFile(t, dir, "bad.data", "-- asm\nmov %r0, 1\nfrob\n-- result\n1\n")
	code, _, stderr = runCLI("disasm", bad)
	if code != 1 || !strings.Contains(stderr, "line 3: unknown mnemonic \"frob\"") {
		t.Errorf("disasm bad.data: exit %d, stderr %q", code, stderr)
	}
	odd := writeFile(t, dir, "odd.bin", "12345")
	if code, _, stderr := runCLI("disasm", odd); code != 1 || !strings.Contains(stderr, "not a multiple of 8") {
		t.Errorf("disasm odd.bin: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCLI("disasm", "--section", "x", bin); code != 2 {
		t.Errorf("disasm --section on raw bytes: exit %d, want 2", code)
	}
}

// An ELF object is printed with its functions and C source lines.
func TestDisasmELF(t *testing.T) {
	obj := filepath.Join("..", "..", "testdata", "loader", "policy.o")
	if _, err := os.Stat(obj); err != nil {
		t.Fatalf("test object missing: %v", err)
	}
	code, stdout, stderr := runCLI("disasm", obj, "--section", "profiler/coll_end")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"# section \"profiler/coll_end\", program on_coll_end:",
		"on_coll_end:\n",
		"# policy.c:",
		"pick_algo:\n",
		"# map percpu_counts",
		"# bpf_map_lookup_elem",
		"(pick_algo)",
		"&small_threshold (.rodata+0)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// A source line is printed once per change, not per instruction.
	lines := strings.Split(stdout, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.Contains(lines[i], "# policy.c:") && lines[i] == lines[i-1] {
			t.Errorf("source line repeated: %q", lines[i])
		}
	}
	code, _, stderr = runCLI("disasm", "--section", "nope", obj)
	if code != 1 || !strings.Contains(stderr, `no program in section "nope"; the object has: `) || !strings.Contains(stderr, "profiler/coll_end (on_coll_end)") {
		t.Errorf("unknown section: exit %d, stderr %q", code, stderr)
	}
	// --plain output assembles back to the program.
	code, stdout, _ = runCLI("disasm", "--plain", "--section", "profiler/coll_end", obj)
	if _, err := asm.Assemble(stdout); code != 0 || err != nil {
		t.Errorf("--plain output does not assemble: %v\n%s", err, stdout)
	}
}

func TestConformanceSeveralEngines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "fail.data", "-- asm\nmov %r0, 2\nexit\n-- result\n0x1\n")
	code, stdout, _ := runCLI("conformance", "--engine", "zz-fake,zz-fake", dir)
	line := "[zz-fake] FAIL " + filepath.Join(dir, "fail.data") + ": r0 = 0x2, want 0x1\n"
	want := line + "zz-fake: 0 passed, 1 failed\n" + line + "zz-fake: 0 passed, 1 failed\n0 passed, 2 failed\n"
	if code != 1 || stdout != want {
		t.Errorf("two engines: exit %d, stdout\n%s\nwant\n%s", code, stdout, want)
	}
}

// End to end: the shared corpus passes on every engine built into the CLI.
func TestConformanceCorpus(t *testing.T) {
	dir := corpus.Dir(t, filepath.Join("..", ".."))
	// every .data file counts: none may be skipped silently
	n := 0
	if err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".data") {
			n++
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if os.Getenv(envconfig.ConformanceDir) == "" && n != 313 {
		t.Errorf("the shared bpf_conformance corpus has %d .data files; the conformance claim is pinned to its 313", n)
	}
	for _, name := range engineNames() {
		if name == "zz-fake" {
			continue
		}
		code, stdout, stderr := runCLI("conformance", "--engine", name, dir)
		if want := fmt.Sprintf("\n%d passed, 0 failed\n", n); code != 0 || !strings.HasSuffix("\n"+stdout, want) || stderr != "" {
			t.Errorf("conformance --engine %s: exit %d\n%s%s", name, code, stdout, stderr)
		}
	}
}

// TestBadInputFiles: every command that reads a file answers a missing,
// empty, random or truncated one (or a folder without tests) with a clear
// error naming it and exit status 1, never a panic.
func TestBadInputFiles(t *testing.T) {
	dir := t.TempDir()
	obj, err := os.ReadFile(filepath.Join("..", "..", "testdata", "loader", "policy.o"))
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 2000)
	rand.New(rand.NewSource(7)).Read(junk)
	files := map[string]string{
		"missing": filepath.Join(dir, "missing.o"),
		"empty":   writeFile(t, dir, "empty.o", ""),
		"random":  writeFile(t, dir, "random.o", string(junk)),
		"trunc":   writeFile(t, dir, "trunc.o", string(obj[:300])),
		"folder":  filepath.Join(dir, "empty-folder"),
	}
	if err := os.Mkdir(files["folder"], 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"disasm", "verify", "run", "conformance", "asm"} {
		for kind, path := range files {
			code, stdout, stderr := runCLI(cmd, path)
			out := stdout + stderr
			if code != 1 || !strings.Contains(out, filepath.Base(path)) || strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
				t.Errorf("ncclbpf %s %s (%s): exit %d, want 1 and an error naming the file\nstdout: %s\nstderr: %s", cmd, filepath.Base(path), kind, code, stdout, stderr)
			}
			if len(out) > 1000 {
				t.Errorf("ncclbpf %s %s (%s): %d bytes of output, want one short error", cmd, filepath.Base(path), kind, len(out))
			}
		}
	}
	// raw instruction bytes are still disassembled, and --raw shows junk
	if code, stdout, _ := runCLI("disasm", "--raw", files["random"]); code != 0 || !strings.Contains(stdout, "0: .insn 0x") {
		t.Errorf("disasm --raw random.o: exit %d, stdout %.200q", code, stdout)
	}
}

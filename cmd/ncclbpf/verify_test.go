package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/internal/offline"
)

const (
	verifyObj = "../../testdata/verifier/tuner.o"
	warnObj   = "../../testdata/verifier/warn.o"
)

func TestVerifyCommand(t *testing.T) {
	code, stdout, stderr := runCLI("verify", verifyObj)
	if code != 1 || stderr != "" {
		t.Fatalf("verify tuner.o: exit %d, stderr %q; want 1 and nothing on stderr", code, stderr)
	}
	for _, want := range []string{
		"FAIL bad_tuner_null (tuner, hook tuner):\n  ./tuner.c:31:19: E012 null-deref: read through r0, which may be null",
		"      ctx->algorithm = *algo; /* ERROR E012 */\n      pc 9: ldxw %r1, [%r0]\n",
		"./tuner.c:38:15: E016 ctx-access-denied: field n_ranks of hook \"tuner\" is read-only",
		"PASS ok_tuner_cached (tuner, hook tuner)",
		"1 passed, 2 failed\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("verify output lacks %q:\n%s", want, stdout)
		}
	}
	if code, stdout, _ := runCLI("verify", "--section", "ok_tuner_cached", verifyObj); code != 0 || !strings.HasSuffix(stdout, "1 passed, 0 failed\n") {
		t.Errorf("verify --section ok_tuner_cached: exit %d, stdout %q", code, stdout)
	}
	// a warning does not fail the program, and names file, line, column, pc
	code, stdout, stderr = runCLI("verify", warnObj)
	want := "PASS ok_tuner_division (tuner, hook tuner): 11 instructions\n" +
		"  ./warn.c:10:32: W100 div-by-zero: the divisor r3 may be 0 (u[0,4294967295]); eBPF then gives 0 for a division and leaves the dividend for a modulo\n" +
		"      __u64 per_rank = ctx->n_bytes / ctx->n_ranks; /* WARNING W100 */\n" +
		"      pc 2: div %r2, %r3\n" +
		"1 passed, 0 failed\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("verify warn.o: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	code, stdout, _ = runCLI("verify", "--json", warnObj)
	var warned []offline.VerifyReport
	if err := json.Unmarshal([]byte(stdout), &warned); err != nil || code != 0 || len(warned) != 1 || len(warned[0].Warnings) != 1 {
		t.Fatalf("verify --json warn.o: exit %d, %v, %q", code, err, stdout)
	}
	if w := warned[0].Warnings[0]; w.Code != "W100" || w.Line != 10 || w.Col != 32 || w.PC != 2 || !strings.HasSuffix(w.File, "warn.c") {
		t.Errorf("verify --json warn.o: warning %+v", w)
	}
	code, stdout, _ = runCLI("verify", "--json", "--section", "bad_tuner_write_input", verifyObj)
	var reports []offline.VerifyReport
	if err := json.Unmarshal([]byte(stdout), &reports); err != nil || code != 1 || len(reports) != 1 {
		t.Fatalf("verify --json: exit %d, %v, %q", code, err, stdout)
	}
	if e := reports[0].Error; e == nil || e.Code != "E016" || e.Name != "ctx-access-denied" || e.Line != 38 || e.PC != 1 {
		t.Errorf("verify --json: error %+v", e)
	}
	if code, _, stderr := runCLI("verify", "--hook", "nope", verifyObj); code != 2 || !strings.Contains(stderr, `unknown hook "nope"`) {
		t.Errorf("verify --hook nope: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI("verify", "--section", "nope", verifyObj); code != 1 || !strings.Contains(stderr, `no program in section "nope"`) {
		t.Errorf("verify --section nope: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCLI("verify"); code != 2 {
		t.Errorf("verify without object: exit %d, want 2", code)
	}
}

// TestObjectFileLimits: verify, run and disasm read a policy object as the
// plugin and reload do: a regular file of at most config.MaxPolicyBytes
// (anything bigger is refused before it is read, and a FIFO without
// waiting for a writer).
func TestObjectFileLimits(t *testing.T) {
	dir := t.TempDir()
	obj, err := os.ReadFile(sizeAwareObj)
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.bpf.o")
	if err := os.WriteFile(big, append(obj, make([]byte, 10<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.bpf.o")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"verify", big}, {"run", big}, {"disasm", big}, {"verify", fifo}, {"run", fifo}, {"disasm", fifo}} {
		want := fmt.Sprintf("over the limit of %d", config.MaxPolicyBytes)
		if args[1] == fifo {
			want = "a FIFO"
		}
		if code, _, stderr := runCLI(args...); code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", args, code, stderr, want)
		}
	}
	if code, _, stderr := runCLI("verify", "builtin:size_aware"); code != 0 {
		t.Errorf("verify builtin:size_aware: exit %d, stderr %q", code, stderr)
	}
}

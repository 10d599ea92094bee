package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// TestDemoUnderLoad runs scripts/demo.sh (what `make demo` runs after the
// build) NCCLBPF_DEMO_RUNS times (default 3; scripts/test-long.sh runs 20)
// while every CPU is kept busy, and fails on any non-zero exit: the
// README's main command must not fail. Before, a pipe from disasm into
// head failed the demo with SIGPIPE (exit 141) in most runs under load.
func TestDemoUnderLoad(t *testing.T) {
	if os.Getenv(envconfig.TestArch) != "" {
		t.Skip("the demo runs the machine's own build; the cross-built library is tested elsewhere")
	}
	artifacts(t)
	_, cli := lockstepTools(t)
	runs := 3
	if v := os.Getenv(envconfig.DemoRuns); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("NCCLBPF_DEMO_RUNS=%q: want a number of runs", v)
		}
		runs = n
	}
	build := t.TempDir()
	for src, dst := range map[string]string{cli: "ncclbpf", art.lib: "libncclbpf.so"} {
		if err := os.Symlink(src, filepath.Join(build, dst)); err != nil {
			t.Fatal(err)
		}
	}
	// CPU load: one spinning goroutine per CPU for as long as the runs last.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var spins atomic.Uint64
	for i := 0; i < runtime.NumCPU(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := uint64(1); ctx.Err() == nil; x++ {
				for k := 0; k < 1<<16; k++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
				spins.Add(x & 1)
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	for i := 0; i < runs; i++ {
		cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "demo.sh"))
		cmd.Env = append(cleanEnv(), "BUILD="+build)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d of %d: the demo failed (%v) after %v:\n%s", i+1, runs, err, time.Since(t0), out)
		}
		s := string(out)
		if !strings.HasSuffix(s, "demo: done\n") {
			t.Fatalf("run %d: the demo did not finish:\n%s", i+1, s)
		}
		for _, want := range []string{"policy chose ring/simple", "warnings logged: 1", "stderr:   ncclbpf: policy"} {
			if !strings.Contains(s, want) {
				t.Fatalf("run %d: the output lacks %q:\n%s", i+1, want, s)
			}
		}
	}
	t.Logf("%d demo runs passed under load on %d CPUs", runs, runtime.NumCPU())
}

// TestDemoScriptNoEarlyExitPipes: no pipeline of the demo script ends in a
// command that stops reading before its input ends (head, grep -q or -m,
// sed with q, awk with exit): the command before it would die of SIGPIPE,
// which pipefail turns into a failed demo.
func TestDemoScriptNoEarlyExitPipes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	early := regexp.MustCompile(`\|\s*(head\b|tail\s+-q\b|grep\s+(-\w*[qm]|--quiet|--max-count)|sed\s+(-\w+\s+)*'[^']*q|awk\s+'[^']*\bexit\b)`)
	for i, line := range strings.Split(string(b), "\n") {
		code, _, _ := strings.Cut(line, "#")
		if m := early.FindString(code); m != "" {
			t.Errorf("scripts/demo.sh:%d: %q stops reading early: %s", i+1, m, strings.TrimSpace(line))
		}
	}
	if !strings.Contains(string(b), "set -euo pipefail") {
		t.Error("scripts/demo.sh no longer sets pipefail: the check above guards a failure mode that needs it")
	}
}

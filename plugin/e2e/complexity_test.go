package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// TestPluginComplexityBound: a policy built to exhaust the verifier
// (testdata/complexity.bpf.c: two programs, each unrolling a loop it cannot
// bound) is refused inside NCCL's first init within a bounded time, with
// exactly one warning naming E026 and NCCL's defaults. The programs of an
// object share one verification budget; before it counted state
// comparisons and was per program, such an object held NCCL's init for
// seconds.
func TestPluginComplexityBound(t *testing.T) {
	artifacts(t)
	clang, err := exec.LookPath("clang-19")
	if err != nil {
		t.Fatalf("clang-19 is needed to build the test policy (scripts/setup.sh installs it): %v", err)
	}
	root := repoRoot(t)
	obj := filepath.Join(art.dir, "complexity.bpf.o")
	if out, err := exec.Command(clang, "-target", "bpf", "-mcpu=v3", "-O2", "-g", "-I", filepath.Join(root, "include"),
		"-c", filepath.Join(root, "plugin/e2e/testdata/complexity.bpf.c"), "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	script := "goready\ninit 0 100 8 1 1 8 8\ninitus\n" +
		call{comm: 0, coll: 4, nBytes: 1 << 20, pipeOps: 1, table: [21]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}}.String() +
		"\nwarns\nstats\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, art.host, "run", art.lib, "6")
	cmd.Env = append(cleanEnv(), envconfig.Policy+"="+obj, envconfig.Control+"=0", "HOST_VERBOSE=1")
	cmd.Stdin = strings.NewReader(script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("the host did not finish in 60 s: %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("host: %v\n%s\n%s", err, out, stderr.String())
	}
	if w := lineWith(string(out), "warns"); len(w) != 1 || w[0] != "1" {
		t.Errorf("warnings %v, want exactly 1\n%s", w, stderr.String())
	}
	if !strings.Contains(string(out)+stderr.String(), "E026") {
		t.Errorf("no E026 in the output:\n%s\n%s", out, stderr.String())
	}
	if s := lineWith(string(out), "stats"); len(s) != 6 || s[5] != "-1" {
		t.Errorf("stats %v, want load status -1", s)
	}
	for _, r := range parseResults(t, string(out)) {
		for k, bits := range r.table {
			if bits != fbits(float32(k+1)) {
				t.Fatalf("cell %d changed: NCCL's defaults not kept", k)
			}
		}
	}
	us, _ := strconv.ParseFloat(strings.Join(lineWith(string(out), "initus"), ""), 64)
	t.Logf("first init with the refused policy: %.1f ms", us/1000)
	if us <= 0 || us > 1e6 {
		t.Errorf("the first init took %.1f ms, want under 1 s", us/1000)
	}
}

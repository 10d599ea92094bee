package e2e

import (
	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRCCLNames loads the library as RCCL resolves plugin names
// (testhost/rccl_names.c): the tuner through both prefixes RCCL releases
// have used (librccl-tuner, libnccl-tuner), by bare name, by default name
// and by absolute path; the profiler as librccl-profiler. The tuner is
// given RCCL's cost table (Tree and Ring only) and must leave the other
// cells unavailable. A name that resolves to no file fails.
func TestRCCLNames(t *testing.T) {
	artifacts(t)
	root := repoRoot(t)
	dir := t.TempDir()
	host := filepath.Join(dir, "rccl_names")
	if err := buildSteps(root, []buildrecipe.Step{{Target: "rccl-names", Out: host}}); err != nil {
		t.Fatal(err)
	}
	libs := filepath.Join(dir, "libs")
	if err := os.Mkdir(libs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"librccl-tuner-ncclbpf.so", "libnccl-tuner-ncclbpf.so", "librccl-tuner.so",
		"libnccl-tuner.so", "librccl-profiler.so", "librccl-profiler-ncclbpf.so"} {
		if err := os.Symlink(art.lib, filepath.Join(libs, n)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(host, args...)
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+libs, envconfig.Policy+"=builtin:size_aware")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range [][]string{
		{"tuner", "librccl-tuner", "ncclbpf"}, {"tuner", "libnccl-tuner", "ncclbpf"},
		{"tuner", "librccl-tuner"}, {"tuner", "libnccl-tuner"}, {"tuner", "libnccl-tuner", art.lib},
		{"profiler", "librccl-profiler"}, {"profiler", "librccl-profiler", "ncclbpf"},
		{"profiler", "librccl-profiler", art.lib},
	} {
		out, err := run(c...)
		if err != nil || !strings.Contains(out, "RCCL NAME OK") {
			t.Errorf("%v: %v\n%s", c, err, out)
		}
	}
	if out, err := run("tuner", "librccl-tuner", "nosuch"); err == nil || !strings.Contains(out, "librccl-tuner-nosuch.so") {
		t.Errorf("a name with no file loaded: %v\n%s", err, out)
	}
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// exportedSymbols returns the dynamic symbols lib defines.
func exportedSymbols(t *testing.T, lib string) []string {
	t.Helper()
	out, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatalf("nm -D %s: %v", lib, err)
	}
	var syms []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			syms = append(syms, f[2])
		}
	}
	return syms
}

var testOnly = regexp.MustCompile(`(?i)testing`)

// TestDistTarball: `make dist`'s script packs the CLI, a production
// libncclbpf.so, the headers, the example policies (sources and objects)
// and SHA256SUMS into ncclbpf-VERSION-OS-ARCH.tar.gz; the sums check out;
// the production library exports NCCL's plugin symbols and no test entry
// point (those are only in builds with -tags ncclbpf_testing, which this
// test also checks, so that the check can fail) and loads a policy in the
// C host; the packed CLI verifies the packed policies.
func TestDistTarball(t *testing.T) {
	if os.Getenv("NCCLBPF_TEST_ARCH") != "" {
		t.Skip("packages the machine's own build")
	}
	artifacts(t)
	_, cli := lockstepTools(t)
	root := repoRoot(t)
	work := t.TempDir()
	prod := filepath.Join(work, "prod", "libncclbpf.so")
	if err := buildSteps(root, [][]string{{"go", "build", "-buildmode=c-shared", "-o", prod, "./plugin"}}); err != nil {
		t.Fatal(err)
	}
	var leaked []string
	for _, s := range exportedSymbols(t, prod) {
		if testOnly.MatchString(s) {
			leaked = append(leaked, s)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("the production library exports test entry points: %v", leaked)
	}
	have := map[string]bool{}
	for _, s := range exportedSymbols(t, prod) {
		have[s] = true
	}
	for _, s := range []string{"ncclTunerPlugin_v5", "ncclTunerPlugin_v6", "ncclProfiler_v5", "ncclNetPlugin_v10"} {
		if !have[s] {
			t.Errorf("the production library does not export %s", s)
		}
	}
	n := 0
	for _, s := range exportedSymbols(t, art.lib) {
		if testOnly.MatchString(s) {
			n++
		}
	}
	if n == 0 {
		t.Error("the test build exports no test entry point: the symbol check above proves nothing")
	}
	out, stderr := hostStderr(t, []string{"NCCLBPF_POLICY=builtin:size_aware"}, "init 0 1 8 1 1 8 8\nstats\n", "run", prod, "5")
	if s := lineWith(out, "stats"); len(s) != 6 || s[5] != "0" {
		t.Errorf("the production library did not load the policy: stats %v\n%s", s, stderr)
	}

	dist := filepath.Join(work, "dist")
	cmd := exec.Command(filepath.Join(root, "scripts", "dist.sh"))
	cmd.Env = append(os.Environ(), "CLI="+cli, "LIB="+prod, "DIST="+dist, "VERSION=1.2.3-rc1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dist.sh: %v\n%s", err, b)
	}
	name := "ncclbpf-1.2.3-rc1-linux-" + runtime.GOARCH
	tarball := filepath.Join(dist, name+".tar.gz")
	x := filepath.Join(work, "x")
	if err := os.MkdirAll(x, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"tar", "-C", x, "-xzf", tarball},
		{"sha256sum", "-c", "--strict", name + ".tar.gz.sha256"},
	} {
		c := exec.Command(c[0], c[1:]...)
		c.Dir = dist
		if b, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c.Args, err, b)
		}
	}
	top := filepath.Join(x, name)
	c := exec.Command("sha256sum", "-c", "--strict", "SHA256SUMS")
	c.Dir = top
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("SHA256SUMS does not check out: %v\n%s", err, b)
	}
	sums, err := os.ReadFile(filepath.Join(top, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			listed[f[1]] = true
		}
	}
	want := []string{"bin/ncclbpf", "lib/libncclbpf.so", "include/ncclbpf.h", "include/ncclbpf_profiler.h",
		"include/ncclbpf_net.h", "README.md", "policies/nccl_tuner.conf"}
	tracked, err := exec.Command("git", "-C", root, "ls-files", "policies/*.bpf.o", "policies/*.bpf.c").Output()
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, strings.Fields(string(tracked))...)
	for _, f := range want {
		if !listed[f] {
			t.Errorf("%s is not in the tarball's SHA256SUMS", f)
		}
	}
	err = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		if rel != "SHA256SUMS" && !listed[rel] {
			t.Errorf("%s is in the tarball but not in SHA256SUMS", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{"policies/size_aware.bpf.o", "policies/rules.bpf.o", "policies/adaptive/adaptive.bpf.o"} {
		c = exec.Command(filepath.Join(top, "bin", "ncclbpf"), "verify", obj)
		c.Dir = top
		if b, err := c.CombinedOutput(); err != nil || !strings.Contains(string(b), " passed, 0 failed") {
			t.Errorf("the packed CLI on the packed %s: %v\n%s", obj, err, b)
		}
	}
}

// TestGoInstall: the CLI installs with plain `go install` of its import
// path from the module, and go.mod has no directive that makes
// `go install github.com/ncclbpf/ncclbpf/cmd/ncclbpf@VERSION` refuse the
// module (replace, exclude).
func TestGoInstall(t *testing.T) {
	if os.Getenv("NCCLBPF_TEST_ARCH") != "" {
		t.Skip("installs for the machine itself")
	}
	root := repoRoot(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^\s*(replace|exclude)\b`).Find(mod); m != nil {
		t.Errorf("go.mod has a %q directive: go install ...@VERSION refuses such a module", strings.TrimSpace(string(m)))
	}
	if !regexp.MustCompile(`(?m)^module github\.com/ncclbpf/ncclbpf$`).Match(mod) {
		t.Error("go.mod's module path is not github.com/ncclbpf/ncclbpf")
	}
	bin := t.TempDir()
	c := exec.Command("go", "install", "github.com/ncclbpf/ncclbpf/cmd/ncclbpf")
	c.Dir = root
	c.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=readonly")
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, b)
	}
	b, err := exec.Command(filepath.Join(bin, "ncclbpf"), "verify", filepath.Join(root, "policies", "noop.bpf.o")).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "1 passed, 0 failed") {
		t.Errorf("the installed CLI: %v\n%s", err, b)
	}
}

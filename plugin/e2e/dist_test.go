package e2e

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
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

// ncclSymbol is a name NCCL looks up in a plugin library.
var ncclSymbol = regexp.MustCompile(`^nccl(TunerPlugin|Profiler|NetPlugin|CollNetPlugin|EnvPlugin)_v[0-9]+$`)

// TestDistTarball: `make dist`'s script builds and packs the CLI, a
// production libncclbpf.so, the headers, the example policies (sources and
// objects), docs/ with the error-code reference, and SHA256SUMS into
// ncclbpf-VERSION-OS-ARCH.tar.gz; the sums check out; the binaries are
// stripped; the CLI says its version and commit even when built without a
// VCS stamp (-buildvcs=false); the library exports NCCL's plugin symbols
// and nothing else (nm -D), while the test build does export test entry
// points (so that the check can fail), and loads a policy in the C host;
// the packed CLI verifies the packed policies.
func TestDistTarball(t *testing.T) {
	if os.Getenv(envconfig.TestArch) != "" {
		t.Skip("packages the machine's own build")
	}
	artifacts(t)
	root := repoRoot(t)
	work := t.TempDir()
	// The Makefile builds through the recipe dist.sh uses, stamping the version.
	mk, err := exec.Command("make", "-C", root, "-s", "-n", "cli", "lib", "VERSION=9.9", "REVISION=feed").CombinedOutput()
	if err != nil || !strings.Contains(string(mk), "VERSION=9.9 REVISION=feed ./scripts/build.sh cli ") ||
		!strings.Contains(string(mk), "./scripts/build.sh lib ") {
		t.Errorf("make cli lib: %v\n%s", err, mk)
	}
	dist := filepath.Join(work, "dist")
	cmd := exec.Command(filepath.Join(root, "scripts", "dist.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION=1.2.3-rc1", "REVISION=0123abcd", "GOFLAGS=-buildvcs=false")
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
	prod := filepath.Join(top, "lib", "libncclbpf.so")
	cli := filepath.Join(top, "bin", "ncclbpf")
	var extra []string
	have := map[string]bool{}
	for _, s := range exportedSymbols(t, prod) {
		have[s] = true
		if !ncclSymbol.MatchString(s) {
			extra = append(extra, s)
		}
	}
	if len(extra) > 0 {
		t.Errorf("the production library exports %d symbols that are not NCCL's: %v", len(extra), extra)
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
	for _, bin := range []string{cli, prod} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		if syms, err := f.Symbols(); len(syms) > 0 || f.Section(".debug_info") != nil {
			t.Errorf("%s is not stripped: %d symbols (%v), DWARF %v", bin, len(syms), err, f.Section(".debug_info") != nil)
		}
		f.Close()
	}
	if out, err := exec.Command(cli, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "ncclbpf 1.2.3-rc1 (commit 0123abcd, ") {
		t.Errorf("the packed CLI's --version: %v %q", err, out)
	}
	// The policy decides in the C host: size_aware picks ring/simple
	// (cell 5) for a 64 MiB allreduce on 8 ranks.
	table := ""
	for i := 0; i < 21; i++ {
		table += fmt.Sprintf(" %d", 50+i)
	}
	out, stderr := hostStderr(t, []string{envconfig.Policy + "=builtin:size_aware"},
		"init 0 1 8 1 1 8 8\ncall 0 4 67108864 1 0"+table+"\nstats\n", "run", prod, "5")
	if s := lineWith(out, "res"); len(s) != 22 || s[1+5] != "00000000" { // NCH, then the 21 cells
		t.Errorf("the production library did not apply the policy: %v\n%s", s, stderr)
	}
	if s := lineWith(out, "stats"); len(s) != 1 || s[0] != "-" {
		t.Errorf("the production library exports the tuner's counters: %v", s)
	}
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
		"include/ncclbpf_net.h", "README.md", "policies/nccl_tuner.conf", "docs/error-codes.md",
		"docs/operators-guide.md", "docs/environment.md", "docs/metrics.md", "docs/grafana/ncclbpf.json"}
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
	if os.Getenv(envconfig.TestArch) != "" {
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

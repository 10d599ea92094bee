//go:build linux && amd64

package cross

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/conformance"
	"github.com/ncclbpf/ncclbpf/jit/amd64"
	"github.com/ncclbpf/ncclbpf/vm"

	"github.com/ncclbpf/ncclbpf/internal/corpus"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// toolchain is what cross-building and emulating need.
type toolchain struct {
	root    string // module root
	qemu    string
	cc      string
	sysroot string
	bin     string // folder of the cross-built test binaries
}

var (
	tcOnce sync.Once
	tc     toolchain
	tcErr  error
)

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// setup finds the tools (failing clearly when one is missing) and
// cross-builds the test binaries of pkgs once per process.
func setup(t *testing.T) toolchain {
	t.Helper()
	tcOnce.Do(func() { tc, tcErr = build() })
	if tcErr != nil {
		t.Fatal(tcErr)
	}
	return tc
}

// crossPkgs are the packages whose tests run under emulation.
var crossPkgs = []string{"./jit/arm64", "./internal/conformance", "./vm"}

func build() (toolchain, error) {
	var c toolchain
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return c, fmt.Errorf("cross: cannot find the module root (go env GOMOD: %v)", err)
	}
	c.root = filepath.Dir(strings.TrimSpace(string(out)))
	missing := "ARM64 TOOLCHAIN MISSING: %s not found (%v); run scripts/setup.sh, which installs qemu-user, gcc-aarch64-linux-gnu and libc6-dev-arm64-cross"
	qemu := getenv(envconfig.QemuAarch64, "qemu-aarch64")
	if c.qemu, err = exec.LookPath(qemu); err != nil {
		if c.qemu, err = exec.LookPath("qemu-aarch64-static"); err != nil {
			return c, fmt.Errorf(missing, qemu, err)
		}
	}
	cc := getenv(envconfig.Aarch64CC, "aarch64-linux-gnu-gcc")
	if c.cc, err = exec.LookPath(cc); err != nil {
		return c, fmt.Errorf(missing, cc, err)
	}
	c.sysroot = getenv(envconfig.Aarch64Sysroot, "/usr/aarch64-linux-gnu")
	if _, err := os.Stat(filepath.Join(c.sysroot, "lib", "ld-linux-aarch64.so.1")); err != nil {
		return c, fmt.Errorf(missing, "the aarch64 C library", err)
	}
	c.bin, err = os.MkdirTemp("", "ncclbpf-arm64-")
	if err != nil {
		return c, err
	}
	args := append([]string{"test", "-c", "-o", c.bin + "/"}, crossPkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=1", "CC="+c.cc)
	if out, err := cmd.CombinedOutput(); err != nil {
		return c, fmt.Errorf("cross: go %s (GOARCH=arm64 CC=%s): %v\n%s", strings.Join(args, " "), c.cc, err, out)
	}
	return c, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tc.bin != "" {
		os.RemoveAll(tc.bin)
	}
	os.Exit(code)
}

// runArm64 runs the cross-built tests of package pkg (a folder under the
// root, e.g. "jit/arm64") under qemu-aarch64 in that folder, and returns
// the verbose output. A failing run fails t.
func runArm64(t *testing.T, c toolchain, pkg string, env []string, args ...string) string {
	t.Helper()
	bin := filepath.Join(c.bin, filepath.Base(pkg)+".test")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("cross: no test binary for %s: %v", pkg, err)
	}
	cmd := exec.Command(c.qemu, append([]string{"-L", c.sysroot, bin, "-test.v"}, args...)...)
	cmd.Dir = filepath.Join(c.root, pkg)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s := out.String()
	if err != nil {
		t.Fatalf("arm64 tests of %s under %s failed: %v\n%s", pkg, filepath.Base(c.qemu), err, tail(s, 8000))
	}
	if !strings.Contains(s, "\nPASS\n") && !strings.HasSuffix(s, "PASS\n") {
		t.Fatalf("arm64 tests of %s: no PASS line\n%s", pkg, tail(s, 8000))
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// ran returns the names of the top-level tests that passed.
func ran(out string) map[string]bool {
	m := map[string]bool{}
	for _, f := range regexp.MustCompile(`(?m)^--- PASS: (\S+)`).FindAllStringSubmatch(out, -1) {
		m[f[1]] = true
	}
	return m
}

func requireRan(t *testing.T, out string, names ...string) {
	t.Helper()
	got := ran(out)
	for _, n := range names {
		if !got[n] {
			t.Errorf("arm64 run did not pass %s\n%s", n, tail(out, 4000))
		}
	}
}

// The arm64 JIT's tests (jit/internal/jittest's, shared with x86-64, and
// its own): encodings, semantic corner cases in both atomic lowerings,
// faults, concurrency, and the differential tests (interpreter vs arm64 JIT
// on random programs, and on random loads from a frozen .rodata).
func TestArm64JIT(t *testing.T) {
	c := setup(t)
	n := getenv(envconfig.Arm64DiffN, "3000")
	out := runArm64(t, c, "jit/arm64", []string{envconfig.DiffN + "=" + n}, "-test.timeout", "6h")
	requireRan(t, out, "TestEncodings", "TestSemantics", "TestDifferential", "TestFoldDifferential", "TestCallDepthBoundary", "TestConcurrentRuns")
	if m := regexp.MustCompile(`(\d+) programs \(seeds [^)]*\), 0 mismatches`).FindStringSubmatch(out); m == nil || m[1] != n {
		t.Errorf("differential test: want %s programs, 0 mismatches\n%s", n, tail(out, 2000))
	}
	t.Logf("arm64 differential: %s programs, 0 mismatches", n)
}

// countsRE matches the corpus test's summary lines.
var countsRE = regexp.MustCompile(`(?m)^\s+conformance_test\.go:\d+: (\w+): (\d+) passed, (\d+) failed`)

// The shared bpf_conformance corpus on the arm64 interpreter and JIT: the
// same pass counts as on x86-64 (computed here, natively).
func TestArm64Conformance(t *testing.T) {
	dir, err := filepath.Abs(corpus.Dir(t, filepath.Join("..", "..")))
	if err != nil {
		t.Fatal(err)
	}
	c := setup(t)
	want := map[string]string{}
	for _, e := range []vm.Engine{vm.NewInterpreter(), amd64.New()} {
		res, err := conformance.RunDir(e, dir)
		if err != nil {
			t.Fatalf("x86-64 %s: %v", e.Name(), err)
		}
		p, f := conformance.Summary(res)
		want[e.Name()] = fmt.Sprintf("%d passed, %d failed", p, f)
	}
	out := runArm64(t, c, "internal/conformance", []string{envconfig.ConformanceDir + "=" + dir})
	got := map[string]string{}
	for _, m := range countsRE.FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2] + " passed, " + m[3] + " failed"
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: arm64 %q, x86-64 %q", name, got[name], w)
		}
		t.Logf("%s: x86-64 %s; arm64 %s", name, w, got[name])
	}
}

// The project's own corpus (vm/testdata/interp) on the arm64 interpreter
// and JIT.
func TestArm64OwnCorpus(t *testing.T) {
	c := setup(t)
	files, _ := filepath.Glob(filepath.Join(c.root, "vm", "testdata", "interp", "*.data"))
	if len(files) == 0 {
		t.Fatal("no .data files in vm/testdata/interp")
	}
	out := runArm64(t, c, "vm", nil, "-test.run", "^(TestInterpDataFiles|TestDataFilesOnJIT)$")
	requireRan(t, out, "TestInterpDataFiles", "TestDataFilesOnJIT")
	t.Logf("%d files of vm/testdata/interp pass on the arm64 interpreter and JIT", len(files))
}

// The tuner, profiler and net plugin tests and a short reload hammer
// against the arm64 libncclbpf.so, loaded by the arm64 C hosts under
// qemu-aarch64 (plugin/e2e's tests cross-build them under
// NCCLBPF_TEST_ARCH=arm64): the net wrapper moves checked data between two
// arm64 processes through the test plugin, with policies and reloads.
func TestArm64Plugin(t *testing.T) {
	c := setup(t)
	tests := []string{"TestPluginSymbolsAndShim", "TestPolicyGrids", "TestProfilerEvents", "TestProfilerMaskFromBundle", "TestProfilerMaskFollowsNeeds", "TestReloadHammer",
		"TestNetTransfer", "TestNetReload", "TestNetTiming", "TestNetFields", "TestNetThreads", "TestNetFill"}
	cmd := exec.Command("go", "test", "-count=1", "-v", "-timeout", "20m", "-run", "^("+strings.Join(tests, "|")+")$", "./plugin/e2e")
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), envconfig.TestArch+"=arm64", envconfig.QemuAarch64+"="+c.qemu,
		envconfig.Aarch64CC+"="+c.cc, envconfig.Aarch64Sysroot+"="+c.sysroot)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nccl tests against the arm64 library: %v\n%s", err, tail(string(out), 8000))
	}
	requireRan(t, string(out), tests...)
}

package buildrecipe

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot returns the top of the checkout.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v (the check needs a git checkout)", err)
	}
	return strings.TrimSpace(string(out))
}

const recipe = "scripts/build.sh"

var (
	// A Go c-shared build, or a go build of the library, the CLI or the
	// smallest Go plugin.
	goBuild = regexp.MustCompile(`-buildmode=c-shared|(\bgo|\$\(?GO\)?|"go"),? "?build\b.*(\./plugin\b|cmd/ncclbpf|testhost/emptygo)`)
	// A C compiler named on a line (gcc, $CC, the tests' targetCC())...
	cCompiler = regexp.MustCompile(`\bgcc\b|\$\{?CC\b|targetCC\(\)`)
	// ...and, on that line or the next three, a C source of this tree's
	// plugin or test hosts.
	cSource = regexp.MustCompile(`\b(testhost|plugin)/[\w./-]*\.c\b`)
)

// TestOneRecipe: libncclbpf.so, the CLI and the C test hosts are built by
// scripts/build.sh only; the Makefile, the scripts and the Go tests call
// it (or this package) instead of naming a compiler and flags of their own.
func TestOneRecipe(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard",
		"*.go", "*.sh", "Makefile", "*.mk").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	self := "internal/buildrecipe/recipe_test.go"
	for _, f := range strings.Fields(string(out)) {
		if f == recipe || f == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree
			}
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if goBuild.MatchString(l) {
				t.Errorf("%s:%d builds the library or the CLI outside %s: %s", f, i+1, recipe, strings.TrimSpace(l))
			}
			if cCompiler.MatchString(l) {
				window := strings.Join(lines[i:min(i+4, len(lines))], "\n")
				if src := cSource.FindString(window); src != "" {
					t.Errorf("%s:%d compiles %s outside %s: %s", f, i+1, src, recipe, strings.TrimSpace(l))
				}
			}
		}
	}
}

// TestTargetsListed: the targets scripts/build.sh documents in its header
// are the ones it builds.
func TestTargetsListed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), recipe))
	if err != nil {
		t.Fatal(err)
	}
	var documented, built []string
	header := regexp.MustCompile(`^#   ([a-z0-9-]+)\s{2,}`)
	label := regexp.MustCompile(`^([a-z0-9| -]+)\)`)
	inCase := false
	for _, l := range strings.Split(string(b), "\n") {
		if m := header.FindStringSubmatch(l); m != nil {
			documented = append(documented, m[1])
		}
		if strings.HasPrefix(l, "case $TARGET in") {
			inCase = true
			continue
		}
		if inCase {
			if m := label.FindStringSubmatch(l); m != nil {
				for _, n := range strings.Split(m[1], "|") {
					built = append(built, strings.TrimSpace(n))
				}
			}
		}
	}
	slices.Sort(documented)
	slices.Sort(built)
	if len(documented) == 0 || !slices.Equal(documented, built) {
		t.Errorf("%s documents targets %v but builds %v", recipe, documented, built)
	}
}

// TestBuild builds a host and a variant of a plugin through the recipe.
func TestBuild(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	dir := t.TempDir()
	err := Build(repoRoot(t), nil,
		Step{Target: "host", Out: filepath.Join(dir, "host")},
		Step{Target: "tcpnet", Out: filepath.Join(dir, "libtcpnet10.so"), Flags: []string{"-DTCPNET_V10"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"host", "libtcpnet10.so"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if err := Build(repoRoot(t), nil, Step{Target: "host", Out: filepath.Join(dir, "x"), Flags: []string{"-O0"}}); err == nil {
		t.Error("a flag other than -D was accepted")
	}
}

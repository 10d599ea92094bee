package bpfbuild

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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

// manifest returns the objects scripts/bpf-objects.txt lists.
func manifest(t *testing.T, root string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "scripts", "bpf-objects.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 2 {
			t.Fatalf("scripts/bpf-objects.txt:%d: want an object and its source, got %q", line, sc.Text())
		}
		if _, err := os.Stat(filepath.Join(root, fields[1])); err != nil {
			t.Errorf("scripts/bpf-objects.txt:%d: source of %s: %v", line, fields[0], err)
		}
		objs = append(objs, fields[0])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(objs)
	return objs
}

// TestObjectsReproducible: every committed *.o has a recipe, and the
// recipe rebuilds it byte for byte (with clang-19).
func TestObjectsReproducible(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "*.o").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	committed := strings.Fields(string(out))
	sort.Strings(committed)
	listed := manifest(t, root)
	if strings.Join(committed, "\n") != strings.Join(listed, "\n") {
		t.Fatalf("committed objects and scripts/bpf-objects.txt differ:\ncommitted: %v\nlisted:    %v", committed, listed)
	}

	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "scripts", "build-bpf.sh"))
	cmd.Env = append(os.Environ(), "OUT="+dir)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-bpf.sh: %v\n%s", err, msg)
	}
	for _, obj := range committed {
		want, err := os.ReadFile(filepath.Join(root, obj))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, obj))
		if err != nil {
			t.Errorf("%s was not rebuilt: %v", obj, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what scripts/build-bpf.sh builds from its source (%d bytes committed, %d built): rebuild it", obj, len(want), len(got))
		}
	}
}

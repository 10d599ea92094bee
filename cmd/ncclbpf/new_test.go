package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/include"
)

// TestNewPolicyBuildsAndVerifies: for every hook, "ncclbpf new" writes a
// policy with a map that compiles with clang-19 and the headers "ncclbpf
// headers" writes, with or without libbpf's helpers header and with no
// kernel header (the compiler's system directories are off), and the
// verifier passes it; the command prints the build command it was compiled
// with. (Mutation: taking the BPF_MAP_TYPE_*/BPF_NOEXIST definitions out
// of ncclbpf.h fails the compile.)
func TestNewPolicyBuildsAndVerifies(t *testing.T) {
	clang, err := exec.LookPath("clang-19")
	if err != nil {
		t.Fatalf("clang-19 is needed to compile the skeletons (scripts/setup.sh installs it): %v", err)
	}
	dir := t.TempDir()
	code, out, stderr := runCLI("headers", filepath.Join(dir, "include"))
	if code != 0 || strings.Count(out, "wrote ") != len(include.Names()) || len(include.Names()) < 3 {
		t.Fatalf("headers: exit %d, %q %q", code, out, stderr)
	}
	// libbpf's <bpf/bpf_helpers.h> alone, without /usr/include and its
	// linux/ and asm/ folders.
	libbpf := filepath.Join(dir, "libbpf")
	if err := os.MkdirAll(libbpf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/include/bpf", filepath.Join(libbpf, "bpf")); err != nil {
		t.Fatal(err)
	}
	for _, hookName := range []string{"tuner", "profiler", "net"} {
		name := "my_" + hookName
		src := filepath.Join(dir, name+".bpf.c")
		code, out, stderr := runCLI("new", name, "--hook", hookName, "-o", src)
		obj := strings.TrimSuffix(src, ".c") + ".o"
		if code != 0 || !strings.Contains(out, "clang-19 -target bpf -mcpu=v3 -O2 -g -I include -c "+src+" -o "+obj+"\n") {
			t.Fatalf("new %s: exit %d, %q %q", hookName, code, out, stderr)
		}
		// With libbpf's helpers header, and with the project's own
		// (nothing but the written headers: the compiler's system
		// directories are off).
		for _, extra := range [][]string{{"-I", libbpf}, nil} {
			args := append([]string{"-target", "bpf", "-mcpu=v3", "-O2", "-g", "-Wall", "-Werror", "-nostdinc",
				"-I", filepath.Join(dir, "include")}, extra...)
			cmd := exec.Command(clang, append(args, "-c", src, "-o", obj)...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", cmd, err, b)
			}
		}
		code, out, stderr = runCLI("verify", obj)
		if code != 0 || !strings.Contains(out, "PASS "+name+" (") || !strings.HasSuffix(out, "1 passed, 0 failed\n") {
			t.Errorf("verify %s: exit %d\n%s%s", obj, code, out, stderr)
		}
		// The skeleton's map changes when it runs.
		code, out, stderr = runCLI("run", obj, "--bytes", "64MiB")
		if code != 0 || !strings.Contains(out, ") changed:\n") {
			t.Errorf("run %s: exit %d\n%s%s", obj, code, out, stderr)
		}
	}
	// A policy may include <linux/bpf.h> before ncclbpf.h (then its
	// definitions stand).
	src := filepath.Join(dir, "with_linux.bpf.c")
	sk, err := os.ReadFile(filepath.Join(dir, "my_tuner.bpf.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, append([]byte("#include <linux/bpf.h>\n"), sk...), 0o644); err != nil {
		t.Fatal(err)
	}
	multiarch, _ := exec.Command("gcc", "-print-multiarch").Output()
	cmd := exec.Command(clang, "-target", "bpf", "-mcpu=v3", "-O2", "-g", "-Wall", "-Werror", "-I", filepath.Join(dir, "include"),
		"-I", "/usr/include/"+strings.TrimSpace(string(multiarch)), "-c", src, "-o", filepath.Join(dir, "with_linux.o"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("<linux/bpf.h> before ncclbpf.h: %v\n%s", err, b)
	}
}

func TestNewAndHeadersErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"new", "x"}, 2, "want --hook net|profiler|tuner"},
		{[]string{"new", "x", "--hook", "nope"}, 2, `no skeleton for hook "nope"; hooks: net, profiler, tuner`},
		{[]string{"new", "1x", "--hook", "tuner"}, 2, `policy name "1x": want a C identifier`},
		{[]string{"new", "--hook", "tuner"}, 2, "want one NAME, got 0 arguments"},
		{[]string{"headers"}, 2, "want one DIR"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	p := filepath.Join(dir, "a.bpf.c")
	if code, _, _ := runCLI("new", "a", "--hook", "tuner", "-o", p); code != 0 {
		t.Fatal("new a")
	}
	if code, _, stderr := runCLI("new", "a", "--hook", "net", "-o", p); code != 1 || !strings.Contains(stderr, "exists") {
		t.Errorf("new over an existing file: exit %d, %q", code, stderr)
	}
	if code, _, _ := runCLI("new", "a", "--hook", "net", "-o", p, "--force"); code != 0 {
		t.Errorf("new --force: exit %d", code)
	}
	inc := filepath.Join(dir, "inc")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inc, "ncclbpf.h"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("headers", inc); code != 1 || !strings.Contains(stderr, "other contents") {
		t.Errorf("headers over other headers: exit %d, %q", code, stderr)
	}
	if code, _, _ := runCLI("headers", "--force", inc); code != 0 {
		t.Errorf("headers --force: exit %d", code)
	}
	want, _ := include.Header("ncclbpf.h")
	if got, _ := os.ReadFile(filepath.Join(inc, "ncclbpf.h")); string(got) != string(want) {
		t.Error("headers --force did not replace ncclbpf.h")
	}
	// The embedded headers are the checkout's.
	for _, n := range include.Names() {
		b, _ := include.Header(n)
		if disk, err := os.ReadFile(filepath.Join("..", "..", "include", n)); err != nil || string(disk) != string(b) {
			t.Errorf("embedded %s differs from include/%s", n, n)
		}
	}
}

package hook

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTunerLayoutMatchesHeader compiles a C program against
// include/ncclbpf.h with gcc that prints offsetof/sizeof of every field the
// Go description names, and compares: the Go layout is generated from
// clang's BTF of the header, the shim is built by gcc, so the two compilers
// must agree byte for byte.
func TestTunerLayoutMatchesHeader(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is needed to check include/ncclbpf.h against hook/zz_contexts.go: %v", err)
	}
	inc, err := filepath.Abs("../include")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"ncclbpf.h\"\n")
	src.WriteString("#define F(s,f) printf(#s \" \" #f \" %zu %zu\\n\", offsetof(struct s,f), sizeof(((struct s*)0)->f))\n")
	src.WriteString("int main(void){\n")
	hooks := []*Hook{Get(Tuner), Get(TunerChunkSize)}
	for _, h := range hooks {
		if h == nil {
			t.Fatal("tuner hooks are not registered")
		}
		fmt.Fprintf(&src, "printf(\"%s sizeof %%zu %%zu\\n\", sizeof(struct %s), sizeof(struct %s));\n",
			h.Context.Name, h.Context.Name, h.Context.Name)
		for _, f := range h.Context.Fields {
			fmt.Fprintf(&src, "F(%s,%s);\n", h.Context.Name, f.Name)
		}
	}
	src.WriteString("return 0;}\n")

	dir := t.TempDir()
	cfile := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "layout")
	if out, err := exec.Command(cc, "-std=c11", "-Wall", "-Werror", "-I", inc, "-o", exe, cfile).CombinedOutput(); err != nil {
		t.Fatalf("compiling the layout probe: %v\n%s", err, out)
	}
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("running the layout probe: %v", err)
	}
	type key struct{ s, f string }
	got := map[key][2]int{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) != 4 {
			t.Fatalf("probe output %q", sc.Text())
		}
		a, _ := strconv.Atoi(w[2])
		b, _ := strconv.Atoi(w[3])
		got[key{w[0], w[1]}] = [2]int{a, b}
	}
	for _, h := range hooks {
		c := h.Context
		if g := got[key{c.Name, "sizeof"}][0]; g != c.Size {
			t.Errorf("sizeof(struct %s) = %d in C, %d in hook %q", c.Name, g, c.Size, h.Name)
		}
		end := 0
		for _, f := range c.Fields {
			g, ok := got[key{c.Name, f.Name}]
			if !ok {
				t.Errorf("%s.%s: not printed by the probe", c.Name, f.Name)
				continue
			}
			n := f.Array
			if n < 1 {
				n = 1
			}
			if g[0] != f.Offset || g[1] != f.Size*n {
				t.Errorf("%s.%s: C offset %d size %d, Go offset %d size %d×%d",
					c.Name, f.Name, g[0], g[1], f.Offset, f.Size, n)
			}
			if f.Offset < end {
				t.Errorf("%s.%s overlaps the previous field", c.Name, f.Name)
			}
			end = f.Offset + f.Size*n
		}
		if end != c.Size {
			t.Errorf("%s: fields end at %d, struct size %d (a field is missing from the Go description)", c.Name, end, c.Size)
		}
	}
}

func TestTunerSections(t *testing.T) {
	for sec, want := range map[string]string{"tuner": Tuner, "tuner/chunk_size": TunerChunkSize} {
		h, err := ForSection(sec)
		if err != nil || h.Name != want {
			t.Errorf("ForSection(%q) = %v, %v; want hook %q", sec, h, err, want)
		}
	}
	if _, err := ForSection("tuner/unknown"); err == nil {
		t.Error("ForSection(tuner/unknown) found a hook")
	}
	// The outputs are the only writable fields.
	for _, f := range Get(Tuner).Context.Fields {
		w := f.Access&Write != 0
		if w != (f.Name == "algorithm" || f.Name == "protocol" || f.Name == "n_channels") {
			t.Errorf("tuner field %s: writable = %v", f.Name, w)
		}
	}
}

package hook

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProfilerContextMatchesHeader compiles a C program against
// include/ncclbpf_profiler.h with gcc that prints offsetof/sizeof of every
// member and checks that the generated ProfilerContext describes exactly
// that layout.
func TestProfilerContextMatchesHeader(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot compile the header")
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"ncclbpf_profiler.h\"\n")
	src.WriteString("#define F(m) printf(\"%s %zu %zu\\n\", #m, offsetof(struct ncclbpf_prof_ctx, m), sizeof(((struct ncclbpf_prof_ctx*)0)->m));\n")
	src.WriteString("int main(void){\n printf(\"sizeof 0 %zu\\n\", sizeof(struct ncclbpf_prof_ctx));\n")
	for _, f := range ProfilerContext.Fields {
		fmt.Fprintf(&src, " F(%s)\n", f.Name)
	}
	src.WriteString(" return 0;\n}\n")

	dir := t.TempDir()
	cfile := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	inc, err := filepath.Abs("../include")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-Wall", "-Werror", "-I", inc, "-o", bin, cfile).CombinedOutput(); err != nil {
		t.Fatalf("compiling the layout probe: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the layout probe: %v", err)
	}
	got := map[string][2]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p := strings.Fields(line)
		if len(p) != 3 {
			t.Fatalf("probe output %q", line)
		}
		off, _ := strconv.Atoi(p[1])
		size, _ := strconv.Atoi(p[2])
		got[p[0]] = [2]int{off, size}
	}
	if got["sizeof"][1] != ProfilerContext.Size {
		t.Errorf("sizeof(struct ncclbpf_prof_ctx) = %d in C, %d in hook/zz_contexts.go", got["sizeof"][1], ProfilerContext.Size)
	}
	end := 0
	for _, f := range ProfilerContext.Fields {
		g := got[f.Name]
		if g[0] != f.Offset || g[1] != f.Size {
			t.Errorf("field %s: C offset %d size %d, Go offset %d size %d", f.Name, g[0], g[1], f.Offset, f.Size)
		}
		if f.Offset != end {
			t.Errorf("field %s at %d leaves a gap or overlap after %d", f.Name, f.Offset, end)
		}
		end = f.Offset + f.Size
	}
	if end != ProfilerContext.Size {
		t.Errorf("fields end at %d, context size %d", end, ProfilerContext.Size)
	}
}

// TestProfilerHookIDsMatchShim checks that the C shim numbers the profiler
// hooks (ncclbpf_prof_hook_id in plugin/profiler.c, ids 1..4) in the order of
// ProfilerHookNames, which the control plane publishes programs by.
func TestProfilerHookIDsMatchShim(t *testing.T) {
	src, err := os.ReadFile("../plugin/profiler.c")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "int ncclbpf_prof_hook_id(")
	if i < 0 {
		t.Fatal("plugin/profiler.c has no ncclbpf_prof_hook_id")
	}
	var names []string
	for _, part := range strings.Split(s[i:i+strings.Index(s[i:], "};")], "\"")[1:] {
		if strings.HasPrefix(part, "profiler/") {
			names = append(names, part)
		}
	}
	if strings.Join(names, ",") != strings.Join(ProfilerHookNames, ",") {
		t.Errorf("shim hook ids %v, hook package %v", names, ProfilerHookNames)
	}
}

// TestProfilerHooksRegistered checks that every profiler section resolves to
// its hook, with a read-only context and the documented helpers.
func TestProfilerHooksRegistered(t *testing.T) {
	for _, name := range ProfilerHookNames {
		h, err := ForSection(name)
		if err != nil {
			t.Fatalf("ForSection(%q): %v", name, err)
		}
		if h.Name != name {
			t.Errorf("section %q resolves to hook %q", name, h.Name)
		}
		for _, f := range h.Context.Fields {
			if f.Access != Read {
				t.Errorf("%s: field %s is not read-only", name, f.Name)
			}
		}
		if fld, _ := h.Context.FieldAt(80, 8); fld == nil || fld.Name != "duration_ns" || fld.Scope != RankLocal {
			t.Errorf("%s: offset 80 should be duration_ns (rank-local), got %+v", name, fld)
		}
		if !h.Allows(1) || h.Allows(8) {
			t.Errorf("%s: helper set wrong: %v", name, h.Helpers)
		}
		if h.Return != (Range{0, 0}) {
			t.Errorf("%s: return range %+v, want [0,0]", name, h.Return)
		}
	}
	if _, err := ForSection("profiler/nope"); err == nil {
		t.Error("unknown profiler section accepted")
	}
}

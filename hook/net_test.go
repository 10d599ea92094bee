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

// TestNetContextMatchesHeader compiles a C program against
// include/ncclbpf_net.h with gcc that prints offsetof/sizeof of every
// member and checks that the generated NetContext describes exactly that
// layout.
func TestNetContextMatchesHeader(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot compile the header")
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"ncclbpf_net.h\"\n")
	src.WriteString("#define F(m) printf(\"%s %zu %zu\\n\", #m, offsetof(struct ncclbpf_net_ctx, m), sizeof(((struct ncclbpf_net_ctx*)0)->m));\n")
	src.WriteString("int main(void){\n printf(\"sizeof 0 %zu\\n\", sizeof(struct ncclbpf_net_ctx));\n")
	for _, f := range NetContext.Fields {
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
	if got["sizeof"][1] != NetContext.Size {
		t.Errorf("sizeof(struct ncclbpf_net_ctx) = %d in C, %d in hook/zz_contexts.go", got["sizeof"][1], NetContext.Size)
	}
	end := 0
	for _, f := range NetContext.Fields {
		g := got[f.Name]
		if g[0] != f.Offset || g[1] != f.Size {
			t.Errorf("field %s: C offset %d size %d, Go offset %d size %d", f.Name, g[0], g[1], f.Offset, f.Size)
		}
		if f.Offset != end {
			t.Errorf("field %s at %d leaves a gap or overlap after %d", f.Name, f.Offset, end)
		}
		end = f.Offset + f.Size
	}
	if end != NetContext.Size {
		t.Errorf("fields end at %d, context size %d", end, NetContext.Size)
	}
}

// TestNetHookIDsMatchShim checks that the C shim numbers the net hooks
// (ncclbpf_net_hook_id in plugin/net.c, ids 1..3) in the order of
// NetHookNames, which the control plane publishes programs by.
func TestNetHookIDsMatchShim(t *testing.T) {
	src, err := os.ReadFile("../plugin/net.c")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "int ncclbpf_net_hook_id(")
	if i < 0 {
		t.Fatal("plugin/net.c has no ncclbpf_net_hook_id")
	}
	var names []string
	for _, part := range strings.Split(s[i:i+strings.Index(s[i:], "};")], "\"")[1:] {
		if strings.HasPrefix(part, "net/") {
			names = append(names, part)
		}
	}
	if strings.Join(names, ",") != strings.Join(NetHookNames, ",") {
		t.Errorf("shim hook ids %v, hook package %v", names, NetHookNames)
	}
}

// TestNetHooksReadOnly checks that every net section resolves to its hook,
// with a read-only context, rank-local measurements, no helper beyond the
// profiler's and a return value of 0: a net program cannot steer the
// transport.
func TestNetHooksReadOnly(t *testing.T) {
	for _, name := range NetHookNames {
		h, err := ForSection(name)
		if err != nil {
			t.Fatalf("ForSection(%q): %v", name, err)
		}
		if h.Name != name || h.Decides {
			t.Errorf("section %q resolves to hook %q (decides %v)", name, h.Name, h.Decides)
		}
		for _, f := range h.Context.Fields {
			if f.Access != Read {
				t.Errorf("%s: field %s is not read-only", name, f.Name)
			}
		}
		for _, local := range []string{"bytes", "duration_ns", "peer_key", "tag"} {
			found := false
			for _, f := range h.Context.Fields {
				if f.Name == local {
					found = true
					if f.Scope != RankLocal {
						t.Errorf("%s: %s should be rank-local", name, local)
					}
				}
			}
			if !found {
				t.Errorf("%s: no field %s", name, local)
			}
		}
		if h.Return != (Range{0, 0}) {
			t.Errorf("%s: return range %+v, want [0,0]", name, h.Return)
		}
	}
}

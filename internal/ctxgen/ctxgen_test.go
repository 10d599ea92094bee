package ctxgen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// object compiles src for the BPF target with BTF and returns the object.
func object(t *testing.T, src string) string {
	t.Helper()
	clang, err := Clang()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "x.c")
	marks, err := os.ReadFile("../../include/ncclbpf_marks.h")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c, append(marks, src...), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "x.o")
	if out, err := exec.Command(clang, "-target", "bpf", "-g", "-O2", "-c", c, "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	return obj
}

func TestReadMembers(t *testing.T) {
	obj := object(t, `
typedef unsigned int u32;
struct ok {
	__ncclbpf_uniform unsigned long long a;
	__ncclbpf_local int b;
	__ncclbpf_uniform u32 c[2][3];
	__ncclbpf_out __ncclbpf_uniform short d;
	__ncclbpf_local unsigned short e;
};
int f(struct ok *p) { return 0; }
`)
	got, err := Read(obj, []Spec{{Struct: "ok", Prefix: "OK"}})
	if err != nil {
		t.Fatal(err)
	}
	s := got[0]
	want := []Member{
		{Name: "a", Offset: 0, Size: 8, Uniform: true},
		{Name: "b", Offset: 8, Size: 4, Signed: true},
		{Name: "c", Offset: 12, Size: 4, Dims: []int{2, 3}, Uniform: true},
		{Name: "d", Offset: 36, Size: 2, Signed: true, Uniform: true, Out: true},
		{Name: "e", Offset: 38, Size: 2},
	}
	if s.Size != 40 || len(s.Members) != len(want) {
		t.Fatalf("struct ok: size %d, %d members; want 40, %d", s.Size, len(s.Members), len(want))
	}
	for i, w := range want {
		m := s.Members[i]
		if m.Name != w.Name || m.Offset != w.Offset || m.Size != w.Size || m.Signed != w.Signed ||
			m.Uniform != w.Uniform || m.Out != w.Out || m.Elems() != w.Elems() || len(m.Dims) != len(w.Dims) {
			t.Errorf("member %d: %+v, want %+v", i, m, w)
		}
	}
	src, err := Source("p", got)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"const OKCtxSize = 40",
		`{Name: "c", Offset: OKCOff, Size: 4, Access: Read, Scope: RankUniform, Array: OKCCells}`,
		`{Name: "d", Offset: OKDOff, Size: 2, Access: Read | Write, Scope: RankUniform}`,
		`{Name: "e", Offset: OKEOff, Size: 2, Access: Read, Scope: RankLocal}`,
		"const OKCCells = 6",
		`"ok.c": {2, 3},`,
	} {
		if !strings.Contains(string(src), line) {
			t.Errorf("generated source lacks %q:\n%s", line, src)
		}
	}
}

// TestReadRefuses: what a context must not be is refused, naming the
// struct, the member and why.
func TestReadRefuses(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"unmarked", "unsigned long long a;", "member a: marked 0 times"},
		{"both", "__ncclbpf_uniform __ncclbpf_local unsigned long long a;", "member a: marked 2 times"},
		{"unknown", `__attribute__((btf_decl_tag("ncclbpf:shared"))) __ncclbpf_local unsigned long long a;`, `unknown mark "ncclbpf:shared"`},
		{"hole", "__ncclbpf_local char a; __ncclbpf_local unsigned long long b;", "member b at offset 8: the previous member ends at 1"},
		{"padding", "__ncclbpf_local unsigned long long a; __ncclbpf_local int b;", "members end at 12, sizeof is 16"},
		{"pointer", "__ncclbpf_local void *a;", "member a: type"},
		{"bitfield", "__ncclbpf_local unsigned int a : 3; __ncclbpf_local unsigned int b : 29;", "member a: a bit field"},
		{"nested", "__ncclbpf_local struct { int x; } a;", "member a: type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := object(t, "struct bad { "+c.body+" };\nint f(struct bad *p) { return 0; }\n")
			_, err := Read(obj, []Spec{{Struct: "bad", Prefix: "Bad"}})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "struct bad") {
				t.Errorf("Read: %v; want an error with %q naming struct bad", err, c.want)
			}
		})
	}
	obj := object(t, "struct other { __ncclbpf_local int a; };\nint f(struct other *p) { return 0; }\n")
	if _, err := Read(obj, []Spec{{Struct: "missing", Prefix: "M"}}); err == nil || !strings.Contains(err.Error(), "struct missing") {
		t.Errorf("a struct the object lacks: %v", err)
	}
}

func TestGoName(t *testing.T) {
	for c, want := range map[string]string{"comm_id": "CommID", "n_bytes": "NBytes", "abi_version": "ABIVersion",
		"gpu_duration_ns": "GPUDurationNs", "n": "N", "reserved2": "Reserved2"} {
		if got := GoName(c); got != want {
			t.Errorf("GoName(%q) = %q, want %q", c, got, want)
		}
	}
}

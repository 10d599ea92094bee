package ncclabi

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

const root = "../.."

// DefaultHeaders is where NCCL's plugin headers are looked for, relative
// to the root of the checkout: one folder per release, <release>/src/include/plugin.
const DefaultHeaders = "../shared/nccl-headers"

var (
	writeFrom    = flag.String("write-facts-from", "", "write a facts file from the NCCL source tree at this path (its src/include/plugin)")
	writeVersion = flag.String("write-facts-version", "", "the release that -write-facts-from holds, e.g. 2.31.2")
	writeSource  = flag.String("write-facts-source", "", "where the headers came from (a line in the file's header)")
)

func cc(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed to compile the ABI headers: %v", name, err)
	}
	return p
}

var (
	oursOnce  sync.Once
	oursFacts *Facts
	oursErr   error
)

// ours compiles ncclbpf's ABI headers (plugin/*_abi.h, include/).
func ours(t *testing.T) *Facts {
	t.Helper()
	oursOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ncclabi")
		if err != nil {
			oursErr = err
			return
		}
		oursFacts, oursErr = Compile(cc(t, "gcc"), dir, "testdata/ours.c",
			[]string{filepath.Join(root, "plugin"), filepath.Join(root, "include")})
	})
	if oursErr != nil {
		t.Fatal(oursErr)
	}
	return oursFacts
}

// ncclRelease compiles one release's plugin headers (with the stand-ins of
// testdata/stub for what needs CUDA).
func ncclRelease(t *testing.T, tree string) *Facts {
	t.Helper()
	f, err := Compile(cc(t, "g++"), t.TempDir(), "testdata/nccl.cc",
		[]string{"testdata/stub", filepath.Join(tree, "src", "include", "plugin")})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// headersDir returns the folder of NCCL's headers, or skips the test (or
// fails it, when NCCLBPF_REQUIRE_NCCL_HEADERS is set or
// NCCLBPF_NCCL_HEADERS names a folder without releases).
func headersDir(t *testing.T) (string, []string) {
	t.Helper()
	named := os.Getenv(envconfig.NCCLHeaders)
	dir := named
	if dir == "" {
		dir = filepath.Join(root, filepath.FromSlash(DefaultHeaders))
	}
	var releases []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "src", "include", "plugin", "nccl_tuner.h")); err == nil {
			releases = append(releases, e.Name())
		}
	}
	if len(releases) > 0 {
		sort.Strings(releases)
		return dir, releases
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	required, warn := envconfig.ParseSwitch(envconfig.RequireNCCLHeaders, os.Getenv(envconfig.RequireNCCLHeaders))
	switch {
	case required || warn != "":
		t.Fatalf("NCCL HEADERS MISSING: no release folders (<release>/src/include/plugin) in %s, and %s=%s requires them",
			dir, envconfig.RequireNCCLHeaders, os.Getenv(envconfig.RequireNCCLHeaders))
	case named != "":
		t.Fatalf("NCCL HEADERS MISSING: %s=%s holds no release folders", envconfig.NCCLHeaders, named)
	}
	t.Skipf("SKIP (no NCCL headers) %s: nothing at %s; set %s to run it", t.Name(), dir, envconfig.NCCLHeaders)
	return "", nil
}

// checkRelease compares every pair that the release defines and returns
// the NCCL types it checked.
func checkRelease(t *testing.T, release string, nccl, o *Facts) map[string]bool {
	t.Helper()
	checked := map[string]bool{}
	for _, p := range pairs {
		n := nccl.Structs[p.NCCL]
		if n == nil {
			continue
		}
		ob := o.Structs[p.Ours]
		if ob == nil {
			t.Errorf("%s: ours has no type %s (for %s)", release, p.Ours, p.NCCL)
			continue
		}
		for _, d := range Compare(p, n, ob) {
			t.Errorf("%s: %s", release, d)
		}
		checked[p.NCCL] = true
	}
	for _, fp := range funcPairs {
		for _, d := range CompareFunc(fp, nccl, o) {
			t.Errorf("%s: %s", release, d)
		}
	}
	for _, c := range constPairs {
		nv, ok := nccl.Consts[c.NCCL]
		if !ok {
			continue
		}
		ov, ok := o.Consts[c.Ours]
		switch {
		case !ok:
			t.Errorf("%s: ours has no constant %s (NCCL's %s = %d)", release, c.Ours, c.NCCL, nv)
		case ov != nv:
			t.Errorf("%s: %s = %d, ours %s = %d", release, c.NCCL, nv, c.Ours, ov)
		}
		checked["const "+c.NCCL] = true
	}
	return checked
}

// TestLayoutsAgainstNCCLHeaders compiles the plugin headers of every
// release in ../shared/nccl-headers and compares each struct of every ABI
// version ncclbpf exports or accepts, member by member, and the constants
// ours restates.
func TestLayoutsAgainstNCCLHeaders(t *testing.T) {
	dir, releases := headersDir(t)
	o := ours(t)
	all := map[string]bool{}
	for _, r := range releases {
		t.Run(r, func(t *testing.T) {
			for k := range checkRelease(t, r, ncclRelease(t, filepath.Join(dir, r)), o) {
				all[k] = true
			}
		})
	}
	// The newest releases come as facts (testdata/*.facts).
	facts, _ := filepath.Glob("testdata/*.facts")
	for _, path := range facts {
		r := strings.TrimSuffix(filepath.Base(path), ".facts")
		t.Run(r+"(facts)", func(t *testing.T) {
			f, err := ReadFactsFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for k := range checkRelease(t, r, f, o) {
				all[k] = true
			}
		})
	}
	// Every pair was checked against some release: a pair that never
	// matches an NCCL type (a misspelt name) checks nothing.
	for _, p := range pairs {
		if !all[p.NCCL] {
			t.Errorf("%s (ours %s) is in no release's headers or facts", p.NCCL, p.Ours)
		}
	}
	for _, c := range constPairs {
		if !all["const "+c.NCCL] {
			t.Errorf("constant %s (ours %s) is in no release's headers or facts", c.NCCL, c.Ours)
		}
	}
}

// TestFactsFiles checks the committed facts files on their own, without
// the header folder: they parse, and ours agrees with them.
func TestFactsFiles(t *testing.T) {
	facts, _ := filepath.Glob("testdata/*.facts")
	if len(facts) == 0 {
		t.Fatal("no testdata/*.facts")
	}
	o := ours(t)
	for _, path := range facts {
		f, err := ReadFactsFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(checkRelease(t, filepath.Base(path), f, o)) == 0 {
			t.Errorf("%s: checks nothing", path)
		}
	}
}

// TestWriteFacts writes testdata/<version>.facts from a source tree when
// asked (-write-facts-from, -write-facts-version): only the layout facts of
// the types and constants the tables name, never header text.
func TestWriteFacts(t *testing.T) {
	if *writeFrom == "" {
		t.Skip("-write-facts-from not given")
	}
	if *writeVersion == "" {
		t.Fatal("-write-facts-version is needed")
	}
	f := ncclRelease(t, *writeFrom)
	var structs, consts []string
	for _, p := range pairs {
		structs = append(structs, p.NCCL)
	}
	for _, c := range constPairs {
		consts = append(consts, c.NCCL)
	}
	k := f.Keep(structs, consts)
	out, err := os.Create(filepath.Join("testdata", *writeVersion+".facts"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	hdr := "NCCL " + *writeVersion + " plugin ABI: layout facts (LP64; offsets and sizes in bytes), written by\n" +
		"go test ./internal/ncclabi -run TestWriteFacts -write-facts-from=TREE -write-facts-version=" + *writeVersion + "\n" +
		"from a compile of that release's src/include/plugin headers. Source: " + *writeSource + "\n" +
		"Lines: struct NAME SIZE | field STRUCT PATH OFFSET SIZE CLASS | const NAME VALUE."
	if err := k.WriteFacts(out, hdr); err != nil {
		t.Fatal(err)
	}
}

// TestCompareFindsDifferences: the comparison fails on a wrong layout, a
// missing member, a wrong class, a wrong prefix size and a wrong
// signature; it passes on the same layout.
func TestCompareFindsDifferences(t *testing.T) {
	n := &Struct{Name: "n", Size: 24, Fields: []Field{
		{Path: "a", Off: 0, Size: 8, Class: "ptr"},
		{Path: "u.b", Off: 8, Size: 4, Class: "float"},
		{Path: "fn", Off: 16, Size: 8, Class: "func(8,4)"},
	}}
	same := &Struct{Name: "o", Size: 24, Fields: append([]Field(nil), n.Fields...)}
	if d := Compare(Pair{NCCL: "n", Ours: "o"}, n, same); len(d) != 0 {
		t.Fatalf("same layout: %v", d)
	}
	cases := []struct {
		name string
		p    Pair
		o    *Struct
		want string
	}{
		{"offset", Pair{}, &Struct{Size: 24, Fields: []Field{{"a", 0, 8, "ptr"}, {"u.b", 12, 4, "float"}, {"fn", 16, 8, "func(8,4)"}}}, "member u.b at 8"},
		{"missing", Pair{}, &Struct{Size: 24, Fields: []Field{{"a", 0, 8, "ptr"}, {"fn", 16, 8, "func(8,4)"}}}, "u.b (offset 8, 4 bytes) missing"},
		{"class", Pair{}, &Struct{Size: 24, Fields: []Field{{"a", 0, 8, "ptr"}, {"u.b", 8, 4, "int"}, {"fn", 16, 8, "func(8,4)"}}}, "u.b is float, ours int"},
		{"signature", Pair{}, &Struct{Size: 24, Fields: []Field{{"a", 0, 8, "ptr"}, {"u.b", 8, 4, "float"}, {"fn", 16, 8, "func(8,8)"}}}, "fn is func(8,4), ours func(8,8)"},
		{"opaque only where said", Pair{}, &Struct{Size: 24, Fields: []Field{{"a", 0, 8, "ptr"}, {"u.b", 8, 4, "float"}, {"fn", 16, 8, "ptr"}}}, "fn is func(8,4), ours ptr"},
		{"size", Pair{}, &Struct{Size: 32, Fields: append([]Field(nil), n.Fields...)}, "size 24, ours 32"},
		{"prefix", Pair{Until: "x"}, &Struct{Size: 40, Fields: append(append([]Field(nil), n.Fields...), Field{"x", 32, 8, "ptr"})}, "size 24, ours 32"},
		{"renamed wrong", Pair{Rename: map[string]string{"a": "b"}}, same, "member a (offset 0, 8 bytes) missing"},
	}
	for _, c := range cases {
		c.p.NCCL, c.p.Ours = "n", "o"
		d := strings.Join(Compare(c.p, n, c.o), "\n")
		if !strings.Contains(d, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, d, c.want)
		}
	}
	ok := Pair{NCCL: "n", Ours: "o", Opaque: []string{"fn"}}
	o := &Struct{Size: 24, Fields: []Field{{"a", 0, 8, "ptr"}, {"u.b", 8, 4, "float"}, {"fn", 16, 8, "ptr"}}}
	if d := Compare(ok, n, o); len(d) != 0 {
		t.Errorf("opaque member: %v", d)
	}
}

// TestMacros: the #define values the constants comparison reads.
func TestMacros(t *testing.T) {
	m := Macros("#define A 7\n#define B (-1)\n#define C (1 << 15)\n#define D 0x4\n#define E 128u\n#define F foo\n#define __G 1\n#define H ((1<<3))\n")
	want := map[string]int64{"A": 7, "B": -1, "C": 1 << 15, "D": 4, "E": 128, "H": 8}
	if len(m) != len(want) {
		t.Errorf("got %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %d, want %d", k, m[k], v)
		}
	}
}

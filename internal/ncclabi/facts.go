// Package ncclabi is ncclbpf's one model of NCCL's plugin ABIs, per
// version:
//
//   - NCCL's own structs: ncclbpf's description (plugin/*_abi.h) checked
//     against NCCL's headers, release by release (this file, compare.go);
//   - the hook contexts a policy reads: generated from ncclbpf's headers
//     (hook/zz_contexts.go, by internal/ctxgen), and what NCCL fills in
//     each per ABI version (the table of the subpackage ctxfill);
//   - NCCL's per-call cost model (costmodel.go): the cost table NCCL hands
//     a tuner, computed from the tables NCCL logs at init (tuninglog.go)
//     and checked against captures of real runs (capture.go,
//     testdata/capture);
//   - what NCCL does with a tuner's decision, per tuner ABI (decision.go).
//
// The shim's fill, `ncclbpf run` (internal/offline) and the C test hosts
// are checked against it.
//
// NCCL's structs are reduced to layout facts by the compiler, never by
// reading C: a translation unit that includes the headers is compiled with
// -g, and the DWARF of the object gives every struct's size and, for every
// leaf member, its path ("coll.seqNumber"; members of anonymous unions and
// structs add no name), offset, size and class (an integer, a float, a
// pointer, or a function pointer with the sizes of its parameters). Numeric
// constants come from the enumerators in the DWARF and from the #defines
// (`cc -dM -E`). A release whose headers are not at hand is described by a
// facts file (testdata/*.facts): the same facts, written by WriteFacts, no
// header text.
package ncclabi

import (
	"bufio"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Field is one leaf member of a struct.
type Field struct {
	Path  string // member names from the struct down, joined by "."
	Off   int64  // byte offset from the start of the outermost struct
	Size  int64
	Class string // "int", "float", "ptr", "func(8,4,...)", "array[N]int", "struct"
}

// Struct is one struct type's layout.
type Struct struct {
	Name   string
	Size   int64
	Fields []Field
}

// Field returns the member at path, or nil.
func (s *Struct) Field(path string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Path == path {
			return &s.Fields[i]
		}
	}
	return nil
}

// Facts is a release's (or ncclbpf's) layout facts.
type Facts struct {
	Structs map[string]*Struct // by typedef name, and by "struct TAG" for tagged structs
	Funcs   map[string]string  // function-pointer typedefs: name -> class
	Consts  map[string]int64
}

func newFacts() *Facts {
	return &Facts{Structs: map[string]*Struct{}, Funcs: map[string]string{}, Consts: map[string]int64{}}
}

// Compile compiles src (C or C++, by its extension) with cc and the include
// folders, and returns the facts of the object: every struct and typedef it
// declares, every enumerator and every integer #define.
func Compile(cc string, dir, src string, includes []string) (*Facts, error) {
	obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))+".o")
	args := []string{"-g", "-fno-eliminate-unused-debug-types", "-c", "-o", obj}
	for _, inc := range includes {
		args = append(args, "-I", inc)
	}
	if out, err := exec.Command(cc, append(args, src)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compile %s: %v\n%s", src, err, out)
	}
	f, err := FromObject(obj)
	if err != nil {
		return nil, err
	}
	margs := []string{"-dM", "-E"}
	for _, inc := range includes {
		margs = append(margs, "-I", inc)
	}
	out, err := exec.Command(cc, append(margs, src)...).Output()
	if err != nil {
		return nil, fmt.Errorf("preprocess %s: %v", src, err)
	}
	for name, v := range Macros(string(out)) {
		if _, ok := f.Consts[name]; !ok {
			f.Consts[name] = v
		}
	}
	return f, nil
}

// FromObject reads the layout facts from an object's DWARF.
func FromObject(path string) (*Facts, error) {
	ef, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	d, err := ef.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := newFacts()
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if e == nil {
			break
		}
		switch e.Tag {
		case dwarf.TagTypedef, dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagEnumerationType:
		default:
			continue
		}
		t, err := d.Type(e.Offset)
		if err != nil {
			return nil, fmt.Errorf("%s: type at %#x: %w", path, e.Offset, err)
		}
		f.add(t)
	}
	return f, nil
}

func (f *Facts) add(t dwarf.Type) {
	switch t := t.(type) {
	case *dwarf.TypedefType:
		switch u := underlying(t.Type).(type) {
		case *dwarf.StructType:
			if !u.Incomplete {
				f.Structs[t.Name] = flatten(t.Name, u)
			}
		case *dwarf.PtrType:
			if _, ok := underlying(u.Type).(*dwarf.FuncType); ok {
				f.Funcs[t.Name] = class(u)
			}
		}
	case *dwarf.StructType:
		if t.StructName != "" && !t.Incomplete {
			name := t.Kind + " " + t.StructName
			f.Structs[name] = flatten(name, t)
			if _, ok := f.Structs[t.StructName]; !ok {
				f.Structs[t.StructName] = f.Structs[name] // C++: the tag is a type name
			}
		}
	case *dwarf.EnumType:
		for _, v := range t.Val {
			f.Consts[v.Name] = v.Val
		}
	}
}

func underlying(t dwarf.Type) dwarf.Type {
	for {
		switch u := t.(type) {
		case *dwarf.TypedefType:
			t = u.Type
		case *dwarf.QualType:
			t = u.Type
		default:
			return t
		}
	}
}

func flatten(name string, st *dwarf.StructType) *Struct {
	s := &Struct{Name: name, Size: st.ByteSize}
	var walk func(prefix string, base int64, st *dwarf.StructType)
	walk = func(prefix string, base int64, st *dwarf.StructType) {
		for _, m := range st.Field {
			path := prefix
			if m.Name != "" {
				if path != "" {
					path += "."
				}
				path += m.Name
			}
			if inner, ok := underlying(m.Type).(*dwarf.StructType); ok && !inner.Incomplete {
				walk(path, base+m.ByteOffset, inner)
				continue
			}
			s.Fields = append(s.Fields, Field{Path: path, Off: base + m.ByteOffset, Size: m.Type.Size(), Class: class(m.Type)})
		}
	}
	walk("", 0, st)
	return s
}

// class names what a member holds, in the terms the comparison needs: no
// signedness or type names, which differ between NCCL's headers and ours
// without changing the ABI (an enum and an int, bool and uint8_t).
func class(t dwarf.Type) string {
	switch u := underlying(t).(type) {
	case *dwarf.FloatType:
		return "float"
	case *dwarf.IntType, *dwarf.UintType, *dwarf.BoolType, *dwarf.CharType, *dwarf.UcharType, *dwarf.EnumType:
		return "int"
	case *dwarf.PtrType:
		fn, ok := underlying(u.Type).(*dwarf.FuncType)
		if !ok {
			return "ptr"
		}
		var ps []string
		for _, p := range fn.ParamType {
			if _, dots := p.(*dwarf.DotDotDotType); dots {
				ps = append(ps, "...")
				continue
			}
			ps = append(ps, strconv.FormatInt(underlying(p).Size(), 10))
		}
		return "func(" + strings.Join(ps, ",") + ")"
	case *dwarf.ArrayType:
		return fmt.Sprintf("array[%d]%s", u.Count, class(u.Type))
	case *dwarf.StructType:
		return u.Kind
	}
	return "other"
}

var defineRE = regexp.MustCompile(`^#define ([A-Za-z_][A-Za-z0-9_]*) (.+)$`)

// Macros returns the #defines of `cc -dM -E` output whose value is an
// integer expression this package understands: a literal, a negation, a
// left shift, in parentheses or not.
func Macros(dump string) map[string]int64 {
	m := map[string]int64{}
	for _, line := range strings.Split(dump, "\n") {
		sub := defineRE.FindStringSubmatch(line)
		if sub == nil || strings.HasPrefix(sub[1], "__") {
			continue
		}
		if v, ok := evalInt(sub[2]); ok {
			m[sub[1]] = v
		}
	}
	return m
}

func evalInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	for strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") && balanced(s[1:len(s)-1]) {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	if i := strings.Index(s, "<<"); i > 0 && balanced(s[:i]) {
		a, ok1 := evalInt(s[:i])
		b, ok2 := evalInt(s[i+2:])
		if ok1 && ok2 && b >= 0 && b < 63 {
			return a << b, true
		}
		return 0, false
	}
	if strings.HasPrefix(s, "-") {
		v, ok := evalInt(s[1:])
		return -v, ok
	}
	s = strings.TrimRight(s, "uUlL")
	v, err := strconv.ParseInt(s, 0, 64)
	return v, err == nil
}

func balanced(s string) bool {
	depth := 0
	for _, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// Keep returns the facts of the named structs, function typedefs and
// constants only (those that a facts file carries).
func (f *Facts) Keep(structs, consts []string) *Facts {
	k := newFacts()
	for _, n := range structs {
		if s, ok := f.Structs[n]; ok {
			k.Structs[n] = s
		}
	}
	for _, n := range consts {
		if v, ok := f.Consts[n]; ok {
			k.Consts[n] = v
		}
	}
	return k
}

// WriteFacts writes f as a facts file: one line per struct, member and
// constant, sorted, so that the file is the same for the same headers.
func (f *Facts) WriteFacts(w io.Writer, header string) error {
	bw := bufio.NewWriter(w)
	for _, l := range strings.Split(strings.TrimSpace(header), "\n") {
		fmt.Fprintf(bw, "# %s\n", l)
	}
	for _, n := range sortedKeys(f.Structs) {
		s := f.Structs[n]
		fmt.Fprintf(bw, "struct %s %d\n", n, s.Size)
		for _, m := range s.Fields {
			path := m.Path
			if path == "" {
				path = "-"
			}
			fmt.Fprintf(bw, "field %s %s %d %d %s\n", n, path, m.Off, m.Size, m.Class)
		}
	}
	for _, n := range sortedKeys(f.Consts) {
		fmt.Fprintf(bw, "const %s %d\n", n, f.Consts[n])
	}
	return bw.Flush()
}

// ReadFacts parses a facts file.
func ReadFacts(r io.Reader) (*Facts, error) {
	f := newFacts()
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		bad := fmt.Errorf("line %d: %q", n, line)
		switch {
		case w[0] == "struct" && len(w) == 3:
			size, err := strconv.ParseInt(w[2], 10, 64)
			if err != nil {
				return nil, bad
			}
			f.Structs[w[1]] = &Struct{Name: w[1], Size: size}
		case w[0] == "field" && len(w) == 6:
			s := f.Structs[w[1]]
			off, err1 := strconv.ParseInt(w[3], 10, 64)
			size, err2 := strconv.ParseInt(w[4], 10, 64)
			if s == nil || err1 != nil || err2 != nil {
				return nil, bad
			}
			path := w[2]
			if path == "-" {
				path = ""
			}
			s.Fields = append(s.Fields, Field{Path: path, Off: off, Size: size, Class: w[5]})
		case w[0] == "const" && len(w) == 3:
			v, err := strconv.ParseInt(w[2], 10, 64)
			if err != nil {
				return nil, bad
			}
			f.Consts[w[1]] = v
		default:
			return nil, bad
		}
	}
	return f, sc.Err()
}

// ReadFactsFile parses the facts file at path.
func ReadFactsFile(path string) (*Facts, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f, err := ReadFacts(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

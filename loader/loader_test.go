package loader_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/loader"
)

const testdata = "../testdata/loader"

func mustLoad(t *testing.T, name string) *loader.CollectionSpec {
	t.Helper()
	c, err := loader.LoadFile(filepath.Join(testdata, name))
	if err != nil {
		t.Fatalf("LoadFile(%s): %v", name, err)
	}
	return c
}

func mapIndex(t *testing.T, c *loader.CollectionSpec, name string) int {
	t.Helper()
	i, m := c.Map(name)
	if m == nil {
		t.Fatalf("no map %q", name)
	}
	return i
}

func TestMaps(t *testing.T) {
	c := mustLoad(t, "policy.o")

	type want struct {
		typ                    loader.MapType
		key, value, max, flags uint32
		freeze                 bool
	}
	wants := map[string]want{
		"stats_array":    {loader.MapTypeArray, 4, 16, 16, 0, false},
		"size_hash":      {loader.MapTypeHash, 8, 4, 1024, 1 /* BPF_F_NO_PREALLOC */, false},
		"lru_cache":      {loader.MapTypeLRUHash, 4, 8, 128, 0, false},
		"percpu_counts":  {loader.MapTypePerCPUArray, 4, 8, 4, 0, false},
		"events":         {loader.MapTypeRingBuf, 0, 0, 4096, 0, false},
		"legacy_counts":  {loader.MapTypeArray, 4, 8, 8, 0, false},
		".rodata":        {loader.MapTypeArray, 4, 12, 1, 0x80, true},
		".rodata.str1.1": {loader.MapTypeArray, 4, 9, 1, 0x80, true},
		".data":          {loader.MapTypeArray, 4, 16, 1, 0, false},
		".bss":           {loader.MapTypeArray, 4, 4, 1, 0, false},
	}
	if len(c.Maps) != len(wants) {
		var names []string
		for _, m := range c.Maps {
			names = append(names, m.Name)
		}
		t.Errorf("maps %v, want %d of them", names, len(wants))
	}
	for i, m := range c.Maps {
		if i > 0 && c.Maps[i-1].Name >= m.Name {
			t.Errorf("maps not sorted by name: %q before %q", c.Maps[i-1].Name, m.Name)
		}
		w, ok := wants[m.Name]
		if !ok {
			t.Errorf("unexpected map %q", m.Name)
			continue
		}
		got := want{m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags, m.Freeze}
		if got != w {
			t.Errorf("map %q: got %+v, want %+v", m.Name, got, w)
		}
		if global := strings.HasPrefix(m.Name, "."); m.IsGlobalData() != global {
			t.Errorf("map %q: IsGlobalData() = %v", m.Name, m.IsGlobalData())
		}
	}

	// BTF types travel with BTF-defined maps.
	_, sa := c.Map("stats_array")
	if sa.Key == nil || sa.Value == nil || sa.Value.TypeName() != "stats" {
		t.Errorf("stats_array: key %v, value %v: want BTF types (value struct stats)", sa.Key, sa.Value)
	}
}

func TestGlobalData(t *testing.T) {
	c := mustLoad(t, "policy.o")

	le := binary.LittleEndian
	rodata := le.AppendUint64(nil, 4096)
	rodata = le.AppendUint32(rodata, 3)
	data := le.AppendUint64(nil, 7)
	data = le.AppendUint64(data, 22) // history[1]; history[0] was optimised away
	contents := map[string][]byte{
		".rodata":        rodata,
		".data":          data,
		".bss":           make([]byte, 4),
		".rodata.str1.1": []byte("coll %d\n\x00"),
	}
	for name, want := range contents {
		_, m := c.Map(name)
		if m == nil {
			t.Errorf("no map %q", name)
			continue
		}
		if !bytes.Equal(m.Data(), want) || len(m.Contents) != 1 || !bytes.Equal(m.Contents[0].Key, []byte{0, 0, 0, 0}) {
			t.Errorf("map %q: contents %x, want one entry: key 0, value %x", name, m.Contents, want)
		}
	}
	for _, m := range c.Maps {
		if !m.IsGlobalData() && m.Contents != nil {
			t.Errorf("map %q: Contents set on a non-data map", m.Name)
		}
	}

	vars := []struct {
		name         string
		section      string
		offset, size uint32
	}{
		{"big_factor", ".rodata", 8, 4},
		{"decisions", ".data", 0, 8},
		{"last_algo", ".bss", 0, 4},
		{"small_threshold", ".rodata", 0, 8},
	}
	if len(c.Variables) != len(vars) {
		t.Errorf("%d variables, want %d (static history.0 is not one)", len(c.Variables), len(vars))
	}
	for i, w := range vars {
		v := c.Variable(w.name)
		if v == nil {
			t.Errorf("no variable %q", w.name)
			continue
		}
		if i < len(c.Variables) && c.Variables[i].Name != w.name {
			t.Errorf("Variables[%d] = %q, want %q (sorted)", i, c.Variables[i].Name, w.name)
		}
		if c.Maps[v.Map].Name != w.section || v.Offset != w.offset || v.Size != w.size {
			t.Errorf("variable %q: in %q at %d size %d, want %q at %d size %d", w.name, c.Maps[v.Map].Name, v.Offset, v.Size, w.section, w.offset, w.size)
		}
		if v.Type == nil {
			t.Errorf("variable %q: no BTF type", w.name)
		}
	}
}

func TestPrograms(t *testing.T) {
	c := mustLoad(t, "policy.o")
	want := []struct {
		section, name string
		funcs         []string
	}{
		{"profiler/coll_end", "on_coll_end", []string{"on_coll_end", "pick_algo"}},
		{"profiler/coll_start", "on_coll_start", []string{"on_coll_start"}},
		{"tuner", "tuner_main", []string{"tuner_main", "bump", "pick_algo"}},
	}
	if len(c.Programs) != len(want) {
		t.Fatalf("%d programs, want %d", len(c.Programs), len(want))
	}
	if c.License != "Dual MIT/GPL" {
		t.Errorf("license %q", c.License)
	}
	for i, w := range want {
		p := c.Programs[i]
		if p.Section != w.section || p.Name != w.name || p.License != c.License {
			t.Errorf("program %d: %s/%s (license %q), want %s/%s", i, p.Section, p.Name, p.License, w.section, w.name)
		}
		var funcs []string
		for j, f := range p.Funcs {
			funcs = append(funcs, f.Name)
			if fa := p.FuncAt(f.Start); fa == nil || fa.Name != f.Name {
				t.Errorf("%s: FuncAt(%d) = %v, want %s", p.Name, f.Start, fa, f.Name)
			}
			if j == len(p.Funcs)-1 && f.End != len(p.Insns) {
				t.Errorf("%s: last function ends at %d of %d", p.Name, f.End, len(p.Insns))
			}
		}
		if !reflect.DeepEqual(funcs, w.funcs) {
			t.Errorf("%s: functions %v, want %v", p.Name, funcs, w.funcs)
		}
		if len(p.Lines) != len(p.Insns) {
			t.Errorf("%s: %d lines for %d instructions", p.Name, len(p.Lines), len(p.Insns))
		}
		if p.FuncAt(len(p.Insns)) != nil || p.FuncAt(-1) != nil {
			t.Errorf("%s: FuncAt out of range is not nil", p.Name)
		}
	}
	if c.Program("tuner_main") != c.Programs[2] || c.Program("nope") != nil {
		t.Error("CollectionSpec.Program lookup")
	}
}

// funcInsns returns the instructions of function name inside p.
func funcInsns(t *testing.T, p *loader.ProgramSpec, name string) []asm.Instruction {
	t.Helper()
	for _, f := range p.Funcs {
		if f.Name == name {
			return p.Insns[f.Start:f.End]
		}
	}
	t.Fatalf("%s: no function %q", p.Name, name)
	return nil
}

func TestCalls(t *testing.T) {
	c := mustLoad(t, "policy.o")
	calls := 0
	for _, p := range c.Programs {
		starts := map[int]string{}
		for _, f := range p.Funcs {
			starts[f.Start] = f.Name
		}
		for pc, ins := range p.Insns {
			if ins.Op != asm.OpCall || ins.Src != asm.PseudoCall {
				continue
			}
			calls++
			target := pc + 1 + int(ins.Imm)
			callee, ok := starts[target]
			if !ok {
				t.Errorf("%s: pc %d: call lands on %d, not on a function's first instruction", p.Name, pc, target)
				continue
			}
			// Every call site in policy.c names its callee on its line.
			if l := p.SourceAt(pc); l == nil || !strings.Contains(l.Source, callee+"(") {
				t.Errorf("%s: pc %d: calls %s but the source line is %v", p.Name, pc, callee, l)
			}
		}
	}
	// tuner_main -> pick_algo, bump; on_coll_end -> pick_algo.
	if calls != 3 {
		t.Errorf("%d BPF-to-BPF calls, want 3", calls)
	}

	// The static subprogram is the same code, references included, in both
	// programs that call it.
	a := funcInsns(t, c.Program("tuner_main"), "pick_algo")
	b := funcInsns(t, c.Program("on_coll_end"), "pick_algo")
	if !reflect.DeepEqual(a, b) {
		t.Errorf("pick_algo differs between programs:\n%v\n%v", a, b)
	}
}

func TestRelocations(t *testing.T) {
	c := mustLoad(t, "policy.o")
	seenMaps := map[string]bool{}
	for _, p := range c.Programs {
		for pc := 0; pc < len(p.Insns); pc++ {
			ins := p.Insns[pc]
			if !ins.IsLdImm64() {
				continue
			}
			second := p.Insns[pc+1]
			l := p.SourceAt(pc)
			switch ins.Src {
			case asm.PseudoMapFD:
				m := c.Maps[ins.Imm]
				seenMaps[m.Name] = true
				if m.IsGlobalData() || second.Imm != 0 {
					t.Errorf("%s: pc %d: map-fd load of %q with second imm %d", p.Name, pc, m.Name, second.Imm)
				}
				if l == nil || !strings.Contains(l.Source, "&"+m.Name) {
					t.Errorf("%s: pc %d: loads map %q on line %v", p.Name, pc, m.Name, l)
				}
			case asm.PseudoMapValue:
				m := c.Maps[ins.Imm]
				off := uint32(second.Imm)
				seenMaps[m.Name] = true
				var name string
				for _, v := range c.Variables {
					if v.Map == int(ins.Imm) && v.Offset == off {
						name = v.Name
					}
				}
				switch {
				case m.Name == ".data" && off == 8:
					name = "history" // static: relocated against the section, offset in the instruction
				case m.Name == ".rodata.str1.1" && off == 0:
					name = `"coll %d\n"`
				}
				if name == "" || l == nil || !strings.Contains(l.Source, name) {
					t.Errorf("%s: pc %d: loads %s+%d (%q) on line %v", p.Name, pc, m.Name, off, name, l)
				}
			case 0:
				t.Errorf("%s: pc %d: plain 64-bit constant; policy.c has none", p.Name, pc)
			}
			pc++
		}
	}
	for _, m := range c.Maps {
		if !seenMaps[m.Name] {
			t.Errorf("map %q is never referenced", m.Name)
		}
	}
}

// markerLines returns, for each "LINE:name" marker in a source file, its
// 1-based line number.
func markerLines(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		if _, rest, ok := strings.Cut(s.Text(), "/* LINE:"); ok {
			name, _, _ := strings.Cut(rest, " ")
			out[name] = n
		}
	}
	return out
}

func TestLineInfo(t *testing.T) {
	c := mustLoad(t, "policy.o")
	markers := markerLines(t, filepath.Join(testdata, "policy.c"))
	where := map[string]string{
		"pick_algo":  "tuner_main",
		"tuner_call": "tuner_main",
		"history":    "tuner_main",
		"printk":     "on_coll_start",
	}
	for marker, prog := range where {
		line := markers[marker]
		if line == 0 {
			t.Fatalf("marker %s not in policy.c", marker)
		}
		p := c.Program(prog)
		found := false
		for pc, l := range p.Lines {
			if l == nil || l.Line != line {
				continue
			}
			found = true
			if filepath.Base(l.File) != "policy.c" || !strings.Contains(l.Source, "/* LINE:"+marker+" */") || l.Col <= 0 {
				t.Errorf("%s: pc %d: line info %+v for marker %s", prog, pc, *l, marker)
			}
			if got := p.SourceAt(pc); got != l {
				t.Errorf("%s: SourceAt(%d) = %v, want %v", prog, pc, got, l)
			}
		}
		if !found {
			t.Errorf("%s: no instruction on line %d (marker %s)", prog, line, marker)
		}
	}

	// SourceAt falls back to the nearest line at or before pc.
	p := c.Program("tuner_main")
	if p.Lines[0] == nil {
		t.Fatal("no line info at pc 0")
	}
	for pc := 1; pc < len(p.Lines); pc++ {
		if p.Lines[pc] == nil {
			if got, want := p.SourceAt(pc), p.SourceAt(pc-1); got != want {
				t.Errorf("SourceAt(%d) = %v, want the previous line %v", pc, got, want)
			}
		}
		if p.Lines[pc] != nil && p.Lines[pc].String() == "" {
			t.Errorf("pc %d: empty String()", pc)
		}
	}
	if p.SourceAt(len(p.Insns)+5) == nil {
		t.Error("SourceAt past the end should give the last line")
	}
}

func TestV4(t *testing.T) {
	c := mustLoad(t, "v4.o")
	p := c.Program("tuner_v4")
	if p == nil || len(c.Programs) != 1 {
		t.Fatalf("programs %v", c.Programs)
	}
	var movsx, sdiv, ldsx, bswap, calls bool
	for pc, ins := range p.Insns {
		switch {
		case ins.Op.Class() == asm.ClassALU64 && ins.Op.ALUOp() == asm.ALUMov && ins.Off != 0:
			movsx = true
		case ins.Op.Class().IsALU() && ins.Op.ALUOp() == asm.ALUDiv && ins.Off == 1:
			sdiv = true
		case ins.Op.Class() == asm.ClassLDX && ins.Op.Mode() == asm.ModeMEMSX:
			ldsx = true
		case ins.Op.Class() == asm.ClassALU64 && ins.Op.ALUOp() == asm.ALUEnd:
			bswap = true
		case ins.Op == asm.OpCall && ins.Src == asm.PseudoCall:
			calls = pc+1+int(ins.Imm) == p.Funcs[1].Start && p.Funcs[1].Name == "scale"
		}
	}
	if !movsx || !sdiv || !ldsx || !bswap || !calls {
		t.Errorf("v4 object: movsx %v sdiv %v ldxsx %v bswap %v call-to-scale %v; want all", movsx, sdiv, ldsx, bswap, calls)
	}
	_, ro := c.Map(".rodata")
	if ro == nil || !bytes.Equal(ro.Data(), []byte{0xfd, 0xff, 0xff, 0xff}) {
		t.Errorf(".rodata = %v, want -3", ro)
	}
}

// TestRawBytes checks that instructions are the object's bytes, except the
// fields that relocations rewrite.
func TestRawBytes(t *testing.T) {
	c := mustLoad(t, "policy.o")
	p := c.Program("on_coll_start")
	// llvm-objdump -d testdata/loader/policy.o, section profiler/coll_start.
	want := []asm.Instruction{
		{Op: 0x61, Dst: 1, Src: 1, Off: 8},
		{Op: 0x63, Dst: 10, Src: 1, Off: -4},
		{Op: 0x85, Imm: 5},
		{Op: 0x7b, Dst: 10, Src: 0, Off: -16},
		{Op: 0xbf, Dst: 2, Src: 10},
		{Op: 0x07, Dst: 2, Imm: -4},
		{Op: 0xbf, Dst: 3, Src: 10},
		{Op: 0x07, Dst: 3, Imm: -16},
		{Op: 0x18, Dst: 1, Src: asm.PseudoMapFD, Imm: int32(mapIndex(t, c, "lru_cache"))},
		{},
		{Op: 0xb7, Dst: 4},
		{Op: 0x85, Imm: 2},
		{Op: 0x61, Dst: 3, Src: 10, Off: -4},
		{Op: 0x18, Dst: 1, Src: asm.PseudoMapValue, Imm: int32(mapIndex(t, c, ".rodata.str1.1"))},
		{},
		{Op: 0xb4, Dst: 2, Imm: 9},
		{Op: 0x85, Imm: 6},
		{Op: 0xb4, Dst: 0},
		{Op: 0x95},
	}
	if !reflect.DeepEqual(p.Insns, want) {
		t.Errorf("on_coll_start:\n got %v\nwant %v", p.Insns, want)
	}
}

func TestDeterministic(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "policy.o"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := loader.LoadBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, err := loader.LoadBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		if d := loader.Summary(first); d != loader.Summary(again) {
			t.Fatalf("load %d differs:\n%s\n---\n%s", i, d, loader.Summary(again))
		}
	}
}

func TestUnsupported(t *testing.T) {
	cases := []struct {
		file string
		want []string // substrings of the error
	}{
		{"unsupported_callback.o", []string{`section "tuner"`, `program "uses_callback"`, `function "step"`, "callbacks", "unsupported_callback.c:"}},
		{"unsupported_core.o", []string{`section "tuner"`, `program "uses_core"`, "CO-RE relocation", "task_struct"}},
		{"unsupported_extern.o", []string{`section "tuner"`, `program "uses_extern"`, `"defined_elsewhere"`, "does not define"}},
		{"unsupported_kconfig.o", []string{`section ".kconfig"`, "__kconfig", "LINUX_KERNEL_VERSION"}},
		{"unsupported_kfunc.o", []string{`section "tuner"`, `program "uses_kfunc"`, `kfunc "bpf_rcu_read_lock"`, "unsupported_kfunc.c:10"}},
		{"unsupported_maptype.o", []string{`section ".maps"`, `map "pending"`, "map type 23"}},
		{"unsupported_structops.o", []string{`section ".struct_ops"`}},
		{"unsupported_tailcall.o", []string{`section ".maps"`, `map "jump_table"`, "map type 3 (ProgramArray"}},
	}
	objs, _ := filepath.Glob(filepath.Join(testdata, "unsupported_*.o"))
	if len(objs) != len(cases) {
		t.Errorf("%d unsupported_*.o objects, %d cases", len(objs), len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			c, err := loader.LoadFile(filepath.Join(testdata, tc.file))
			if err == nil {
				t.Fatalf("loaded (%d programs), want an error", len(c.Programs))
			}
			if !errors.Is(err, loader.ErrNotSupported) {
				t.Errorf("error does not wrap ErrNotSupported: %v", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	obj, err := os.ReadFile(filepath.Join(testdata, "policy.o"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loader.LoadBytes(obj); err != nil {
			b.Fatal(err)
		}
	}
}

package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	cilasm "github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
)

// MapType is a map type, numbered like Linux's enum bpf_map_type.
type MapType uint32

// Map types that a CollectionSpec may hold.
const (
	MapTypeHash          MapType = 1
	MapTypeArray         MapType = 2
	MapTypePerCPUHash    MapType = 5
	MapTypePerCPUArray   MapType = 6
	MapTypeLRUHash       MapType = 9
	MapTypeLRUPerCPUHash MapType = 10
	MapTypeRingBuf       MapType = 27
)

// mapTypeNames names the map types the loader accepts.
var mapTypeNames = map[MapType]string{
	MapTypeHash:          "hash",
	MapTypeArray:         "array",
	MapTypePerCPUHash:    "percpu_hash",
	MapTypePerCPUArray:   "percpu_array",
	MapTypeLRUHash:       "lru_hash",
	MapTypeLRUPerCPUHash: "lru_percpu_hash",
	MapTypeRingBuf:       "ringbuf",
}

// String returns the map type's name as libbpf spells it ("hash",
// "array", ...), or "maptype#N" for a type the loader does not accept.
func (t MapType) String() string {
	if n, ok := mapTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("maptype#%d", uint32(t))
}

// Supported reports whether the loader accepts map type t; any other type
// is an error wrapping ErrNotSupported.
func (t MapType) Supported() bool {
	_, ok := mapTypeNames[t]
	return ok
}

// flagRdonlyProg is Linux's BPF_F_RDONLY_PROG.
const flagRdonlyProg = 0x80

// tailCallHelper is bpf_tail_call's helper id.
const tailCallHelper helpers.ID = 12

func load(r io.ReaderAt) (*CollectionSpec, error) {
	obj, err := openObject(r)
	if err != nil {
		return nil, err
	}
	if err := checkBTF(r, obj); err != nil {
		return nil, err
	}
	cs, err := ebpf.LoadCollectionSpecFromReader(r)
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) {
			err = notSupported{err}
		}
		if !obj.hasBTF {
			err = fmt.Errorf("%w: %s", err, NoDebugInfoHint)
		}
		return nil, err
	}
	if cs.ByteOrder != binary.LittleEndian {
		return nil, fmt.Errorf("byte order %v: only little-endian objects are supported: %w", cs.ByteOrder, ErrNotSupported)
	}

	if err := checkExterns(cs.Types); err != nil {
		return nil, err
	}

	c := &CollectionSpec{BTF: cs.Types}
	mapIndex, err := c.convertMaps(cs, obj)
	if err != nil {
		return nil, err
	}
	if err := c.convertVariables(cs, mapIndex); err != nil {
		return nil, err
	}

	names := make([]string, 0, len(cs.Programs))
	for name := range cs.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ps := cs.Programs[name]
		p, err := convertProgram(obj, ps, c.Maps, mapIndex)
		if err != nil {
			return nil, fmt.Errorf("section %q: program %q: %w", ps.SectionName, name, err)
		}
		if err := p.validate(c.Maps); err != nil {
			return nil, fmt.Errorf("section %q: program %q: %w", ps.SectionName, name, err)
		}
		c.Programs = append(c.Programs, p)
	}
	if len(c.Programs) == 0 {
		return nil, errors.New("no programs: put each entry function in a named section with SEC(\"...\")")
	}
	sort.SliceStable(c.Programs, func(i, j int) bool {
		a, b := c.Programs[i], c.Programs[j]
		if a.Section != b.Section {
			return a.Section < b.Section
		}
		return a.Name < b.Name
	})
	c.License = c.Programs[0].License
	return c, nil
}

// checkBTF reads the object's BTF and BTF.ext up front and decodes every
// type, in id order, so that a broken object gets the same verdict every
// time. cilium/ebpf decodes types lazily, in an order that depends on map
// iteration, and ignores ext infos (func and line info) whose reading fails
// with btf.ErrNotFound, which a missing type id also gives: fuzzing found
// objects that loaded or not depending on the order (see
// TestBrokenBTFVerdictIsStable).
func checkBTF(r io.ReaderAt, obj *objectFile) error {
	spec, ext, err := btf.LoadSpecAndExtInfosFromReader(r)
	switch {
	case errors.Is(err, btf.ErrNotFound) && !obj.hasBTF:
		return nil // no type information at all: allowed
	case err != nil:
		return fmt.Errorf("load BTF: %w", err)
	case ext == nil && obj.hasBTFExt:
		return errors.New("load BTF: section \".BTF.ext\" refers to types that do not exist")
	}
	for _, err := range spec.All() {
		if err != nil {
			return fmt.Errorf("load BTF: %w", err)
		}
	}
	return nil
}

// NoDebugInfoHint says how to build an object with the BTF and line
// information that maps, settings and error positions need.
const NoDebugInfoHint = "it was built without -g; rebuild it with -g: " +
	"clang-19 -target bpf -mcpu=v3 -O2 -g -I include -c policy.bpf.c -o policy.bpf.o"

// contextType names the struct the first parameter of fn points to ("" when
// unknown: no BTF, no parameter, not a pointer to a named struct).
func contextType(fn *btf.Func) string {
	if fn == nil {
		return ""
	}
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok || len(proto.Params) == 0 {
		return ""
	}
	ptr, ok := btf.UnderlyingType(proto.Params[0].Type).(*btf.Pointer)
	if !ok {
		return ""
	}
	switch t := btf.UnderlyingType(ptr.Target).(type) {
	case *btf.Struct:
		return t.Name
	case *btf.Fwd: // a struct the source never defined (a misspelt name)
		if t.Kind == btf.FwdStruct {
			return t.Name
		}
	}
	return ""
}

// notSupported makes an error of cilium/ebpf's that wraps its
// ErrNotSupported wrap ours too, without changing its text.
type notSupported struct{ error }

func (e notSupported) Unwrap() []error { return []error{e.error, ErrNotSupported} }

// isDataSection reports whether a section holds global data (the same rule
// cilium/ebpf applies).
func isDataSection(name string) bool {
	return name == ".bss" || strings.HasPrefix(name, ".data") || strings.HasPrefix(name, ".rodata")
}

// convertMaps fills c.Maps sorted by name and returns the index of each.
func (c *CollectionSpec) convertMaps(cs *ebpf.CollectionSpec, obj *objectFile) (map[string]int, error) {
	names := make([]string, 0, len(cs.Maps))
	for name := range cs.Maps {
		names = append(names, name)
	}
	sort.Strings(names)
	index := make(map[string]int, len(names))
	for _, name := range names {
		m, err := convertMap(name, cs.Maps[name])
		if err != nil {
			if sec := obj.objects[name]; sec != "" && !isDataSection(name) {
				err = fmt.Errorf("section %q: %w", sec, err)
			}
			return nil, err
		}
		index[name] = len(c.Maps)
		c.Maps = append(c.Maps, m)
	}
	return index, nil
}

func convertMap(name string, ms *ebpf.MapSpec) (*MapSpec, error) {
	m := &MapSpec{
		Name:       name,
		Type:       MapType(ms.Type),
		KeySize:    ms.KeySize,
		ValueSize:  ms.ValueSize,
		MaxEntries: ms.MaxEntries,
		Flags:      ms.Flags,
		Key:        ms.Key,
		Value:      ms.Value,
	}
	if isDataSection(name) {
		if len(ms.Contents) != 1 || ms.Type != ebpf.Array || ms.MaxEntries != 1 {
			return nil, fmt.Errorf("data section %q: unexpected shape (%s, %d entries)", name, ms.Type, ms.MaxEntries)
		}
		data, ok := ms.Contents[0].Value.([]byte)
		if !ok || uint32(len(data)) != ms.ValueSize {
			return nil, fmt.Errorf("data section %q: contents do not match its size %d", name, ms.ValueSize)
		}
		value := bytes.Clone(data)
		if value == nil {
			value = []byte{}
		}
		m.Contents = []MapKV{{Key: make([]byte, 4), Value: value}}
		m.Freeze = strings.HasPrefix(name, ".rodata")
		if m.Freeze {
			m.Flags |= flagRdonlyProg
		}
		return m, nil
	}

	what := fmt.Sprintf("map %q", name)
	if _, ok := mapTypeNames[m.Type]; !ok {
		return nil, fmt.Errorf("%s: map type %d (%s; supported: %s): %w", what, m.Type, ms.Type, supportedTypeList(), ErrNotSupported)
	}
	switch {
	case ms.InnerMap != nil:
		return nil, fmt.Errorf("%s: map-in-map: %w", what, ErrNotSupported)
	case len(ms.Contents) > 0:
		return nil, fmt.Errorf("%s: initial contents (.values): %w", what, ErrNotSupported)
	case ms.Pinning != ebpf.PinNone:
		return nil, fmt.Errorf("%s: pinning (%d): %w", what, ms.Pinning, ErrNotSupported)
	case ms.MapExtra != 0:
		return nil, fmt.Errorf("%s: map_extra (%#x): %w", what, ms.MapExtra, ErrNotSupported)
	case ms.NumaNode != 0:
		return nil, fmt.Errorf("%s: numa_node (%d): %w", what, ms.NumaNode, ErrNotSupported)
	}
	if ms.Extra != nil {
		extra, err := io.ReadAll(ms.Extra)
		if err != nil {
			return nil, fmt.Errorf("%s: reading definition: %w", what, err)
		}
		if len(bytes.Trim(extra, "\x00")) > 0 {
			return nil, fmt.Errorf("%s: legacy definition has %d bytes beyond struct bpf_map_def (id, pinning, ...): %w", what, len(extra), ErrNotSupported)
		}
	}
	return m, nil
}

func (c *CollectionSpec) convertVariables(cs *ebpf.CollectionSpec, mapIndex map[string]int) error {
	for name, vs := range cs.Variables {
		idx, ok := mapIndex[vs.SectionName]
		if !ok {
			return fmt.Errorf("variable %q: section %q has no map", name, vs.SectionName)
		}
		v := &VariableSpec{Name: name, Map: idx, Offset: vs.Offset, Size: uint32(len(vs.Value)), section: c.Maps[idx]}
		if uint64(v.Offset)+uint64(v.Size) > uint64(c.Maps[idx].ValueSize) {
			return fmt.Errorf("variable %q: [%d, %d) lies outside section %q", name, v.Offset, v.Offset+v.Size, vs.SectionName)
		}
		if vs.Type != nil {
			v.Type = vs.Type.Type
		}
		c.Variables = append(c.Variables, v)
	}
	sort.Slice(c.Variables, func(i, j int) bool { return c.Variables[i].Name < c.Variables[j].Name })
	return nil
}

// convertProgram builds a ProgramSpec from cilium/ebpf's flattened program:
// its instruction stream gives the order of the functions, the references
// and the line info; the instruction bytes themselves are taken from the
// object unchanged, so nothing is lost in a round trip through another
// instruction model.
func convertProgram(obj *objectFile, ps *ebpf.ProgramSpec, maps []*MapSpec, mapIndex map[string]int) (*ProgramSpec, error) {
	p := &ProgramSpec{Name: ps.Name, Section: ps.SectionName, License: ps.License}
	in := ps.Instructions
	if len(in) == 0 || in[0].Symbol() != ps.Name {
		return nil, errors.New("instruction stream does not start with the program's symbol")
	}
	p.ContextType = contextType(btf.FuncMetadata(&in[0]))

	// Pass 1: copy each function's bytes and lay the functions out.
	type site struct {
		pc  int
		ins *cilasm.Instruction
		fn  string
	}
	var sites []site
	starts := make(map[string]int)
	lineCache := make(map[*btf.Line]*LineInfo)
	var fnInsns []asm.Instruction
	fnName, k := "", 0 // current function, slot index inside it
	for i := range in {
		ci := &in[i]
		if sym := ci.Symbol(); sym != "" {
			if fnName != "" && k != len(fnInsns) {
				return nil, fmt.Errorf("function %q: %d slots in the object, %d decoded", fnName, len(fnInsns), k)
			}
			if _, dup := starts[sym]; dup {
				return nil, fmt.Errorf("function %q linked twice", sym)
			}
			raw, err := obj.instructions(sym)
			if err != nil {
				return nil, err
			}
			fnName, fnInsns, k = sym, raw, 0
			starts[sym] = len(p.Insns)
			if n := len(p.Funcs); n > 0 {
				p.Funcs[n-1].End = len(p.Insns)
			}
			p.Funcs = append(p.Funcs, Func{Name: sym, Start: len(p.Insns)})
			p.Insns = append(p.Insns, raw...)
			p.Lines = append(p.Lines, make([]*LineInfo, len(raw))...)
		}
		width := int(ci.Width())
		if k+width > len(fnInsns) {
			return nil, fmt.Errorf("function %q: decoded instructions overrun its %d slots", fnName, len(fnInsns))
		}
		pc := len(p.Insns) - len(fnInsns) + k
		if (width == 2) != p.Insns[pc].IsLdImm64() {
			return nil, fmt.Errorf("pc %d (function %q): instruction width disagrees with the object's bytes", pc, fnName)
		}
		if l, ok := ci.Source().(*btf.Line); ok && l != nil {
			li := lineCache[l]
			if li == nil {
				li = &LineInfo{File: l.FileName(), Line: int(l.LineNumber()), Col: int(l.LineColumn()), Source: strings.TrimSpace(l.Line())}
				lineCache[l] = li
			}
			p.Lines[pc] = li
		}
		if relo := btf.CORERelocationMetadata(ci); relo != nil {
			return nil, fmt.Errorf("pc %d (function %q%s): CO-RE relocation %s: %w", pc, fnName, atLine(p, pc), relo, ErrNotSupported)
		}
		sites = append(sites, site{pc, ci, fnName})
		k += width
	}
	if k != len(fnInsns) {
		return nil, fmt.Errorf("function %q: %d slots in the object, %d decoded", fnName, len(fnInsns), k)
	}
	if n := len(p.Funcs); n > 0 {
		p.Funcs[n-1].End = len(p.Insns)
	}

	// Pass 2: resolve references into our instruction model.
	for _, s := range sites {
		if err := resolve(p, s.pc, s.ins, maps, mapIndex, starts); err != nil {
			return nil, fmt.Errorf("pc %d (function %q%s): %w", s.pc, s.fn, atLine(p, s.pc), err)
		}
	}
	return p, nil
}

func atLine(p *ProgramSpec, pc int) string {
	if l := p.SourceAt(pc); l != nil {
		return ", " + l.String()
	}
	return ""
}

// resolve rewrites the slot(s) at pc according to the relocation cilium/ebpf
// found for ci, and rejects what has no meaning outside the kernel.
func resolve(p *ProgramSpec, pc int, ci *cilasm.Instruction, maps []*MapSpec, mapIndex map[string]int, starts map[string]int) error {
	ins := &p.Insns[pc]
	ref := ci.Reference()
	switch {
	case ins.IsLdImm64():
		lo := &p.Insns[pc+1]
		if ref == "" {
			if ins.Src != 0 || ci.Src != cilasm.R0 {
				// A pseudo load with no relocation: clang writes these for
				// extern __kconfig variables; a map fd here would be a
				// number from another process.
				return fmt.Errorf("64-bit load with pseudo source %d and no relocation (extern __kconfig variable?): %w", max(ins.Src, asm.Register(ci.Src)), ErrNotSupported)
			}
			return nil
		}
		switch ci.Src {
		case cilasm.PseudoMapFD:
			idx, ok := mapIndex[ref]
			if !ok {
				return fmt.Errorf("reference to map %q: no such map", ref)
			}
			if maps[idx].IsGlobalData() {
				return fmt.Errorf("reference to %q: a data section loaded as a map handle", ref)
			}
			ins.Src, ins.Imm, lo.Imm = asm.PseudoMapFD, int32(idx), 0
		case cilasm.PseudoMapValue:
			idx, ok := mapIndex[ref]
			if !ok || !maps[idx].IsGlobalData() {
				return fmt.Errorf("reference to global data in %q: no such data section", ref)
			}
			off := uint32(uint64(ci.Constant) >> 32)
			// clang puts the offset of static variables in the
			// instruction (relocations against the section symbol), and
			// writes 0 there for others (relocations against the
			// variable's symbol, whose value cilium/ebpf uses). An
			// addend on top of a symbol value is ambiguous: refuse it.
			if ins.Imm != 0 && uint32(ins.Imm) != off {
				return fmt.Errorf("reference to %q: relocation with addend %d against a variable symbol: %w", ref, ins.Imm, ErrNotSupported)
			}
			if off >= maps[idx].ValueSize {
				return fmt.Errorf("reference to %q at offset %d: outside the section's %d bytes", ref, off, maps[idx].ValueSize)
			}
			ins.Src, ins.Imm, lo.Imm = asm.PseudoMapValue, int32(idx), int32(off)
		case cilasm.PseudoFunc:
			return fmt.Errorf("address of function %q (callbacks, bpf_loop): %w", ref, ErrNotSupported)
		default:
			return fmt.Errorf("64-bit load of extern symbol %q (kfunc, __ksym or an undefined variable): %w", ref, ErrNotSupported)
		}
		return nil

	case ins.Op == asm.OpCall:
		switch {
		case ref != "" && ci.IsKfuncCall():
			return fmt.Errorf("call to kfunc %q: %w", ref, ErrNotSupported)
		case ref != "" && ci.IsFunctionCall():
			if _, isMap := mapIndex[ref]; isMap {
				return fmt.Errorf("call instruction relocated against map %q", ref)
			}
			target, ok := starts[ref]
			if !ok {
				return fmt.Errorf("call to function %q, which the object does not define (linking several objects): %w", ref, ErrNotSupported)
			}
			ins.Src, ins.Imm = asm.PseudoCall, int32(target-pc-1)
		case ref != "":
			return fmt.Errorf("call with relocation against %q: not a BPF-to-BPF call (source %d)", ref, ins.Src)
		case ins.Src == asm.PseudoCall:
			return errors.New("BPF-to-BPF call without a relocation")
		case ins.Src != asm.PseudoHelper:
			return fmt.Errorf("call with source %d: %w", ins.Src, ErrNotSupported)
		case helpers.ID(ins.Imm) == tailCallHelper:
			return fmt.Errorf("bpf_tail_call: tail calls: %w", ErrNotSupported)
		}
		return nil

	case ref != "":
		return fmt.Errorf("relocation against %q on opcode %#02x: %w", ref, uint8(ins.Op), ErrNotSupported)
	}
	return nil
}

func supportedTypeList() string {
	ts := make([]MapType, 0, len(mapTypeNames))
	for t := range mapTypeNames {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = mapTypeNames[t]
	}
	return strings.Join(names, ", ")
}

// checkExterns refuses extern __kconfig variables, which only a kernel can
// provide, naming them: their loads carry no relocation to name them by.
func checkExterns(spec *btf.Spec) error {
	if spec == nil {
		return nil
	}
	// .ksyms (kfuncs, __ksym variables) is reported where it is used,
	// with the pc and source line.
	for _, sec := range []struct{ name, what string }{
		{".kconfig", "extern __kconfig variables"},
	} {
		var ds *btf.Datasec
		if err := spec.TypeByName(sec.name, &ds); err != nil {
			continue
		}
		var names []string
		for _, v := range ds.Vars {
			if v.Type != nil {
				names = append(names, v.Type.TypeName())
			}
		}
		sort.Strings(names)
		return fmt.Errorf("section %q: %s (%s): %w", sec.name, sec.what, strings.Join(names, ", "), ErrNotSupported)
	}
	return nil
}

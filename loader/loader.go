package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"

	"github.com/cilium/ebpf/btf"

	"github.com/ncclbpf/ncclbpf/asm"
)

// ErrNotSupported is wrapped by every error about a feature the object uses
// that this runtime does not provide (CO-RE, kfuncs, tail calls, unknown map
// types, ...), as opposed to an object that is malformed.
var ErrNotSupported = errors.New("not supported")

// CollectionSpec is everything one ELF object holds: its programs and the maps
// they share.
type CollectionSpec struct {
	// Programs are sorted by Section, then Name.
	Programs []*ProgramSpec
	// Maps are sorted by Name. The Imm of an LD_IMM64 map reference is an
	// index into this slice.
	Maps []*MapSpec
	// Variables are the global variables of the data sections, sorted by
	// Name. Hidden and static variables are not listed.
	Variables []*VariableSpec
	// License is the contents of the "license" section, "" if none.
	License string
	// BTF is the object's type information; nil if it has none.
	BTF *btf.Spec
}

// ProgramSpec is one entry point: a function in a named ELF section, linked
// with every function it calls.
type ProgramSpec struct {
	// Name is the entry function's symbol name.
	Name string
	// Section is the ELF section the entry function is in ("tuner",
	// "profiler/coll_end", ...); it selects the hook.
	Section string
	// License is the collection's license.
	License string
	// Insns holds one instruction per 64-bit slot: the entry function
	// first, then each called function, so pc 0 is the entry point.
	Insns []asm.Instruction
	// Lines has one entry per slot of Insns: the source line that starts
	// at that pc, or nil where no line information starts there.
	Lines []*LineInfo
	// Funcs lists the functions in Insns, sorted by Start; Funcs[0] is the
	// entry function. Every BPF-to-BPF call targets the Start of one.
	Funcs []Func
	// ContextType is the name of the struct the entry function's
	// parameter points to, from BTF ("ncclbpf_tuner_ctx"); "" when the
	// object has no BTF for it or the parameter is not a pointer to a
	// named struct.
	ContextType string
}

// HasLineInfo reports whether the object gave p source lines (it was
// built with -g).
func (p *ProgramSpec) HasLineInfo() bool {
	for _, l := range p.Lines {
		if l != nil {
			return true
		}
	}
	return false
}

// Func is one function (the entry point or a subprogram) inside a
// ProgramSpec's instructions.
type Func struct {
	// Name is the function's symbol name.
	Name string
	// Start and End delimit the function's slots: Insns[Start:End].
	Start, End int
}

// LineInfo is a source position taken from the object's BTF line info.
type LineInfo struct {
	// File is the source file name as the compiler recorded it.
	File string
	// Line and Col are 1-based; Col is 0 when unknown.
	Line, Col int
	// Source is the text of the source line with surrounding blanks
	// removed; "" if the compiler did not record it.
	Source string
}

// String returns "file:line:col" (or "file:line" when Col is unknown).
func (l *LineInfo) String() string {
	if l == nil {
		return "<unknown>"
	}
	if l.Col > 0 {
		return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Col)
	}
	return fmt.Sprintf("%s:%d", l.File, l.Line)
}

// MapSpec describes a map: what the loader found in the object (a
// BTF-defined or legacy map definition, or a global-data section), what the
// verifier checks programs against, and what package maps creates. It is
// the one description of a map before it exists; a live map keeps the spec
// it was created from.
type MapSpec struct {
	// Name is the map's symbol name, or the section name (".rodata",
	// ".data", ".bss", ".rodata.str1.1", ...) for global data.
	Name string
	// Type uses Linux's enum bpf_map_type numbering.
	Type       MapType
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	// Flags are the map_flags of the definition; for .rodata* sections it
	// is BPF_F_RDONLY_PROG (0x80), as Linux has it.
	Flags uint32
	// Contents are the entries stored when the map is created. A global
	// data section is a one-entry array: key 0 (4 zero bytes) and the
	// section's bytes as its value (zeroes for .bss). Other maps of an
	// object have none.
	Contents []MapKV
	// Freeze makes the map read-only for the control plane once Contents
	// are written, as libbpf freezes .rodata*. The loader sets it for
	// .rodata* sections, which programs may not write either (Flags), so
	// their contents never change once the map exists: the verifier and
	// the JIT may read them.
	Freeze bool
	// Key and Value are the BTF types of key and value, nil if unknown.
	// For global data Value is the section's *btf.Datasec.
	Key, Value btf.Type
}

// MapKV is one initial entry of a map.
type MapKV struct {
	Key, Value []byte
}

// IsGlobalData reports whether m holds a global-data section (.data*,
// .rodata*, .bss).
func (m *MapSpec) IsGlobalData() bool { return isDataSection(m.Name) }

// Data returns the value of a global-data section's one entry (the bytes
// its variables live in), or nil for any other map.
func (m *MapSpec) Data() []byte {
	if !m.IsGlobalData() || len(m.Contents) != 1 {
		return nil
	}
	return m.Contents[0].Value
}

// Copy returns a copy of m whose Contents may be changed without changing
// m's.
func (m *MapSpec) Copy() *MapSpec {
	c := *m
	c.Contents = make([]MapKV, len(m.Contents))
	for i, kv := range m.Contents {
		c.Contents[i] = MapKV{Key: bytes.Clone(kv.Key), Value: bytes.Clone(kv.Value)}
	}
	if m.Contents == nil {
		c.Contents = nil
	}
	return &c
}

// VariableSpec is a global variable in a data section. Set changes its
// initial value, which is part of the section's MapSpec.Contents.
type VariableSpec struct {
	Name string
	// Map is the index in CollectionSpec.Maps of the section holding it.
	Map int
	// Offset and Size locate the variable inside the map's value.
	Offset, Size uint32
	// Type is the variable's BTF type, nil if the object has no BTF for it.
	Type btf.Type
	// section is the MapSpec of the data section holding the variable.
	section *MapSpec
}

// Value returns the variable's initial value, as it will be when its
// section's map is created.
func (v *VariableSpec) Value() []byte {
	d := v.section.Data()
	if uint64(v.Offset)+uint64(v.Size) > uint64(len(d)) {
		return nil
	}
	return d[v.Offset : v.Offset+v.Size]
}

// Set changes the variable's initial value. value is either a []byte of
// exactly the variable's size, or an integer (any of Go's integer types)
// that fits the variable's size (1, 2, 4 or 8 bytes) as a signed or an
// unsigned number and is stored little-endian.
func (v *VariableSpec) Set(value any) error {
	var b []byte
	switch x := value.(type) {
	case []byte:
		if len(x) != int(v.Size) {
			return fmt.Errorf("%d bytes given, the variable has %d", len(x), v.Size)
		}
		b = x
	default:
		u, ok := asUint64(value)
		if !ok {
			return fmt.Errorf("cannot set a variable from a %T (want []byte or an integer)", value)
		}
		var err error
		if b, err = encodeInt(u, int(v.Size)); err != nil {
			return err
		}
	}
	dst := v.Value()
	if dst == nil {
		return errors.New("not in a global data section")
	}
	copy(dst, b)
	return nil
}

// asUint64 returns an integer of any of Go's integer types as uint64
// (negative numbers in two's complement).
func asUint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case uint32:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint8:
		return uint64(x), true
	case uint:
		return uint64(x), true
	case int64:
		return uint64(x), true
	case int32:
		return uint64(int64(x)), true
	case int16:
		return uint64(int64(x)), true
	case int8:
		return uint64(int64(x)), true
	case int:
		return uint64(int64(x)), true
	}
	return 0, false
}

// encodeInt returns v as size little-endian bytes (size 1, 2, 4 or 8),
// checking that it fits as a signed or an unsigned integer of that size.
func encodeInt(v uint64, size int) ([]byte, error) {
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return nil, fmt.Errorf("a %d-byte variable is not an integer", size)
	}
	if size < 8 {
		bits := uint(size * 8)
		s := int64(v)
		if v >= 1<<bits && (s < -(1<<(bits-1)) || s >= 0) {
			return nil, fmt.Errorf("value %d does not fit in %d bytes", s, size)
		}
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b[:size], nil
}

// Copy returns a copy of c whose maps' Contents and variables may be
// changed (VariableSpec.Set) without changing c's. Programs and BTF, which
// nothing changes, are shared.
func (c *CollectionSpec) Copy() *CollectionSpec {
	n := *c
	n.Maps = make([]*MapSpec, len(c.Maps))
	for i, m := range c.Maps {
		n.Maps[i] = m.Copy()
	}
	n.Variables = make([]*VariableSpec, len(c.Variables))
	for i, v := range c.Variables {
		nv := *v
		nv.section = n.Maps[v.Map]
		n.Variables[i] = &nv
	}
	n.Programs = append([]*ProgramSpec(nil), c.Programs...)
	return &n
}

// SourceAt returns the line information nearest at or before pc, or nil
// if there is none. It is meant for error messages: a pc inside a
// statement maps to the line the statement starts on.
func (p *ProgramSpec) SourceAt(pc int) *LineInfo {
	if pc >= len(p.Lines) {
		pc = len(p.Lines) - 1
	}
	for ; pc >= 0; pc-- {
		if l := p.Lines[pc]; l != nil {
			return l
		}
	}
	return nil
}

// Source locates pc in the C source, for error messages: the file, line,
// column and text of the line nearest at or before pc (SourceAt); line 0
// when there is no line information. It is the verifier's Config.Source.
func (p *ProgramSpec) Source(pc int) (file string, line, col int, text string) {
	if l := p.SourceAt(pc); l != nil {
		return l.File, l.Line, l.Col, l.Source
	}
	return "", 0, 0, ""
}

// FuncAt returns the function containing pc, or nil if pc is out of range.
func (p *ProgramSpec) FuncAt(pc int) *Func {
	i := sort.Search(len(p.Funcs), func(i int) bool { return p.Funcs[i].End > pc })
	if i < len(p.Funcs) && p.Funcs[i].Start <= pc {
		return &p.Funcs[i]
	}
	return nil
}

// Program returns the program named name, or nil.
func (c *CollectionSpec) Program(name string) *ProgramSpec {
	for _, p := range c.Programs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Map returns the index and spec of the map named name, or -1 and nil.
func (c *CollectionSpec) Map(name string) (int, *MapSpec) {
	for i, m := range c.Maps {
		if m.Name == name {
			return i, m
		}
	}
	return -1, nil
}

// Variable returns the variable named name, or nil.
func (c *CollectionSpec) Variable(name string) *VariableSpec {
	for _, v := range c.Variables {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// LoadFile reads the ELF object at path.
func LoadFile(path string) (*CollectionSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	defer f.Close()
	c, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return c, nil
}

// LoadBytes reads an ELF object held in memory.
func LoadBytes(b []byte) (*CollectionSpec, error) {
	return Load(bytes.NewReader(b))
}

// Load reads an ELF object. It never panics: a malformed or hostile object
// gives an error.
func Load(r io.ReaderAt) (c *CollectionSpec, err error) {
	defer func() {
		if v := recover(); v != nil {
			c, err = nil, &panicError{v: v, stack: debug.Stack()}
		}
	}()
	c, err = load(r)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// panicError is a panic recovered while parsing. It is a bug (ours or the
// ELF library's) that a malformed object reached; the fuzz test looks for it.
type panicError struct {
	v     any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("malformed object: internal error while parsing: %v", e.v)
}

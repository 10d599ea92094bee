package loader

import (
	"bytes"
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

// MapSpec describes a map the programs refer to: a BTF-defined or legacy
// map definition, or a global-data section.
type MapSpec struct {
	// Name is the map's symbol name, or the section name (".rodata",
	// ".data", ".bss", ".rodata.str1.1", ...) for global data.
	Name string
	// Type uses Linux's enum bpf_map_type numbering (see MapTypeName).
	Type       uint32
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	// Flags are the map_flags of the definition; for .rodata* sections it
	// is BPF_F_RDONLY_PROG (0x80), as Linux has it.
	Flags uint32
	// Contents is the initial value of global-data maps (one value of
	// ValueSize bytes, zeroes for .bss); nil for all other maps.
	Contents []byte
	// ReadOnly is true for .rodata* sections: programs may not write them.
	ReadOnly bool
	// Key and Value are the BTF types of key and value, nil if unknown.
	// For global data Value is the section's *btf.Datasec.
	Key, Value btf.Type
}

// IsGlobalData reports whether m holds a global-data section.
func (m *MapSpec) IsGlobalData() bool { return m.Contents != nil }

// VariableSpec is a global variable in a data section.
type VariableSpec struct {
	Name string
	// Map is the index in CollectionSpec.Maps of the section holding it.
	Map int
	// Offset and Size locate the variable inside the map's value.
	Offset, Size uint32
	// Type is the variable's BTF type, nil if the object has no BTF for it.
	Type btf.Type
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

// Package vm defines how programs are executed: the Engine interface that
// the reference interpreter (this package) and the x86-64 JIT (package
// jit/amd64) both implement, and the Program they are given.
//
// An engine receives instructions whose map references are already bound to
// live native maps (MapRef) and a helper table whose entries are native C
// functions, so that every engine calls the very same helper code.
package vm

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/structure"
)

// Engine turns a Program into something that runs.
type Engine interface {
	// Name is the engine's name as the CLI spells it ("interp", "jit").
	Name() string
	// Compile prepares p for execution. p must not be modified afterwards.
	Compile(p *Program) (Executable, error)
}

// Executable is a compiled program.
type Executable interface {
	// Run executes the program with r1 = address of mem[0] (0 when mem is
	// empty), r2 = len(mem) and r10 at the top of a fresh 512-byte stack,
	// and returns r0. It is safe to call from several goroutines at once.
	// An error means the program faulted (the interpreter traps accesses
	// outside known memory; verified programs never fault).
	Run(mem []byte) (uint64, error)
	// Close releases the program's resources. Run must not be in progress
	// or called afterwards.
	Close() error
}

// NativeExecutable is implemented by engines that produce native code.
type NativeExecutable interface {
	Executable
	// Entry is the address of a C-callable `uint64_t fn(void *ctx)`
	// (System V ABI) that runs the program with r1 = ctx.
	Entry() uintptr
}

// Program is what an engine compiles: instructions with resolved
// references, the maps they refer to and the helpers they may call.
type Program struct {
	// Name is used in error messages.
	Name string
	// Insns: LD_IMM64 with Src=asm.PseudoMapFD has Imm = index into Maps;
	// with Src=asm.PseudoMapValue, Imm = index into Maps and the second
	// slot's Imm = byte offset into value 0. CALL with Src=asm.PseudoCall
	// targets pc+1+Imm (a subprogram in the same slice).
	Insns   []asm.Instruction
	Maps    []MapRef
	Helpers HelperTable
	// Structure, when set, is Insns as validated by structure.Validate
	// with at most len(Maps) maps (the verifier's Result.Structure is
	// one). Engines trust it and do not validate Insns again; nil: they
	// validate Insns themselves (Validate).
	Structure *structure.Program
}

// Validate returns p's validated structure: p.Structure when it describes
// p.Insns, else the result of structure.Validate, accepting callx. Every
// engine starts from it.
func (p *Program) Validate() (*structure.Program, *structure.Error) {
	if s := p.Structure; s != nil && len(s.Insns) == len(p.Insns) && len(p.Insns) > 0 && &s.Insns[0] == &p.Insns[0] &&
		s.Options().Maps <= len(p.Maps) {
		return s, nil
	}
	return structure.Validate(p.Insns, structure.Options{Maps: len(p.Maps), Callx: true})
}

// MapRef is a live map as seen by an engine. It is plain data so that the
// engines need not depend on the map implementation.
type MapRef struct {
	Name string
	// Handle is the address of the native map object: what LD_IMM64
	// map-fd loads into a register and what map helpers receive.
	Handle uintptr
	// Type is the map type (Linux's enum bpf_map_type numbering).
	Type       uint32
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	// ArrayBase is the address of value 0 for array maps whose values are
	// contiguous (stride ValueSize rounded up to 8), 0 for other types.
	// LD_IMM64 map-value loads ArrayBase+offset; a JIT may inline lookups.
	ArrayBase uintptr
	// ArrayStride is the distance in bytes between consecutive values.
	ArrayStride uint32
	// ReadOnly says programs may only read the map's values (Linux's
	// BPF_F_RDONLY_PROG, as libbpf sets for .rodata). The interpreter
	// traps stores and atomics to them.
	ReadOnly bool
	// Frozen says the control plane can no longer change the map's
	// contents (libbpf freezes .rodata; freezing is one-way). Together with
	// ReadOnly (programs cannot write either) the contents never change
	// after the program is compiled, and engines may read them at compile
	// time (the JIT folds loads of .rodata tunables into constants).
	Frozen bool
}

// Helper is one callable helper function.
type Helper struct {
	ID helpers.ID
	// Addr is a native function `uint64_t f(uint64_t, uint64_t, uint64_t,
	// uint64_t, uint64_t)` (System V ABI).
	Addr uintptr
	// Proto describes arguments and result; nil for test helpers that
	// take and return scalars only.
	Proto *helpers.Proto
	// UnwindOnZero: when the helper returns 0 the program stops at once
	// with r0 = 0 (the conformance suite's "unwind" helper).
	UnwindOnZero bool
	// ArrayLookup says the helper is bpf_map_lookup_elem with the array
	// semantics of package maps (a key below MaxEntries gives ArrayBase +
	// key*ArrayStride, any other key 0), so that an engine may do the
	// lookup itself for an array map with contiguous values instead of
	// calling Addr.
	ArrayLookup bool
}

// HelperTable maps helper ids to helpers. Calls to ids absent from the
// table are rejected by the verifier and fault at run time.
type HelperTable map[helpers.ID]Helper

// Package analysis derives, once for both JIT backends, what code
// generation needs to know about a program before any instruction is
// lowered: the functions and LD_IMM64 slots (from the structure every engine
// trusts, package structure), whether BPF-to-BPF calls need a run-time depth
// check, the helper table in callx order, the values LD_IMM64 loads, loads
// from frozen read-only maps that are constants, and the registers some
// path may read before writing them. Nothing here depends on the
// instruction set: a backend is its encoder and its lowering of each
// instruction, given an Info.
package analysis

import (
	"fmt"
	"sort"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/structure"
	"github.com/ncclbpf/ncclbpf/vm"
)

// MaxInstructions is the largest program (in slots) the JITs compile; fault
// words carry the pc in 24 bits.
const MaxInstructions = 1 << 20

// MaxCallxID bounds the ids callx can dispatch (the table is dense).
const MaxCallxID = 1 << 12

// Info is what code generation needs to know about one program. It is
// read-only once Analyze returns it.
type Info struct {
	// Structure is the program's validated structure.
	Structure *structure.Program
	// Second[pc] says slot pc is the second half of an LD_IMM64.
	Second []bool
	// FuncStart are the entry pcs of the functions, ascending; [0] = 0.
	FuncStart []int32
	// FuncOf[pc] is the index into FuncStart of the function holding pc.
	FuncOf []int32
	// DepthCheck: emit a call-depth check at each BPF-to-BPF call (the
	// call graph has a cycle or a chain deeper than vm.MaxCallDepth).
	DepthCheck bool
	// HelperIDs are the ids of the program's helper table, ascending (the
	// order of the callx table).
	HelperIDs []int32
	// TableLen is the number of entries of the callx table (max id + 1),
	// 0 when the program has no callx.
	TableLen int32
	// HasCallx: the program contains a callx.
	HasCallx bool
	// Folded[pc]: the load at pc reads a frozen map and is the constant
	// FoldVal[pc] (nil when no load is folded; see fold.go).
	Folded  []bool
	FoldVal []uint64
	// DropLd[pc]: the LD_IMM64 at pc is dead after folding; emit nothing.
	DropLd []bool

	prog     *vm.Program
	insns    []asm.Instruction
	isTarget []bool // pcs a jump lands on, function starts (inline.go)
}

// ErrAt formats a compile error at pc, wrapping vm.ErrInvalidProgram.
func ErrAt(pc int, ins asm.Instruction, format string, args ...any) error {
	return fmt.Errorf("pc %d (op %#02x): %s: %w", pc, uint8(ins.Op), fmt.Sprintf(format, args...), vm.ErrInvalidProgram)
}

// Analyze takes p's validated structure (vm.Program.Validate) and derives
// the Info of p, or the error that makes p uncompilable.
func Analyze(p *vm.Program) (*Info, error) {
	n := len(p.Insns)
	if n == 0 {
		return nil, fmt.Errorf("no instructions: %w", vm.ErrInvalidProgram)
	}
	if n > MaxInstructions {
		return nil, fmt.Errorf("%d instructions, more than %d: %w", n, MaxInstructions, vm.ErrInvalidProgram)
	}
	sp, serr := p.Validate()
	if serr != nil {
		return nil, ErrAt(serr.PC, p.Insns[serr.PC], "%s", serr.Msg)
	}
	a := &Info{Structure: sp, prog: p, insns: p.Insns, Second: make([]bool, n), FuncOf: make([]int32, n)}
	for pc := range n {
		a.Second[pc] = sp.IsSecond(pc)
		a.FuncOf[pc] = int32(sp.FuncOf(pc))
	}
	for _, f := range sp.Funcs {
		a.FuncStart = append(a.FuncStart, int32(f.Start))
	}
	a.HasCallx = sp.HasCallx()
	a.DepthCheck = sp.CheckCalls(vm.MaxCallDepth) != nil
	for id, h := range p.Helpers {
		if h.ID != id {
			return nil, fmt.Errorf("helper table entry %d holds helper %d: %w", id, h.ID, vm.ErrInvalidProgram)
		}
		if h.Addr == 0 {
			return nil, fmt.Errorf("helper %v has no address: %w", id, vm.ErrInvalidProgram)
		}
		a.HelperIDs = append(a.HelperIDs, int32(id))
	}
	sort.Slice(a.HelperIDs, func(i, j int) bool { return a.HelperIDs[i] < a.HelperIDs[j] })
	if a.HasCallx && len(a.HelperIDs) > 0 {
		maxID := a.HelperIDs[len(a.HelperIDs)-1]
		if a.HelperIDs[0] < 0 || maxID >= MaxCallxID {
			return nil, fmt.Errorf("callx needs helper ids in [0, %d), the table has %d..%d: %w", MaxCallxID, a.HelperIDs[0], maxID, vm.ErrInvalidProgram)
		}
		a.TableLen = maxID + 1
	}
	a.foldConstLoads()
	a.markTargets()
	return a, nil
}

// Helper returns the helper that the call at pc (a HelperCall slot) calls.
func (a *Info) Helper(pc int) (vm.Helper, error) {
	ins := a.insns[pc]
	h, ok := a.prog.Helpers[helpers.ID(ins.Imm)]
	if !ok {
		return h, ErrAt(pc, ins, "call to unknown helper %d", ins.Imm)
	}
	if h.Addr == 0 {
		return h, ErrAt(pc, ins, "helper %d has no address", ins.Imm)
	}
	return h, nil
}

// LdImm64 returns the value the LD_IMM64 at pc loads: its constant, a map
// handle (PseudoMapFD) or the address of a map value (PseudoMapValue).
// drop says the instruction is dead after folding (DropLd) and emits
// nothing. The validated structure guarantees its form and map index.
func (a *Info) LdImm64(pc int) (v uint64, drop bool, err error) {
	ins := a.insns[pc]
	v, _ = asm.Imm64(a.insns, pc)
	maps := a.prog.Maps
	switch ins.Src {
	case asm.PseudoMapFD:
		v = uint64(maps[ins.Imm].Handle)
	case asm.PseudoMapValue:
		m := maps[ins.Imm]
		off := uint32(a.insns[pc+1].Imm)
		if m.ArrayBase == 0 {
			return 0, false, ErrAt(pc, ins, "map %q has no direct value address", m.Name)
		}
		stride := m.ArrayStride
		if stride == 0 {
			stride = (m.ValueSize + 7) &^ 7
		}
		if size := uint64(stride) * uint64(m.MaxEntries); uint64(off) >= size {
			return 0, false, ErrAt(pc, ins, "offset %d beyond the %d bytes of map %q", off, size, m.Name)
		}
		v = uint64(m.ArrayBase) + uint64(off)
	}
	return v, a.DropLd != nil && a.DropLd[pc], nil
}

// NearHint returns an address the code should be placed near: the lowest
// helper address, so that helper calls can be direct (rel32 on x86-64, BL
// on AArch64). 0 when the program has no helpers.
func (a *Info) NearHint() uintptr {
	var best uintptr
	for _, h := range a.prog.Helpers {
		if h.Addr != 0 && (best == 0 || h.Addr < best) {
			best = h.Addr
		}
	}
	return best
}

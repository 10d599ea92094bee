package analysis

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/structure"
	"github.com/ncclbpf/ncclbpf/vm"
)

// ArrayLookup is a bpf_map_lookup_elem call that the backends emit inline:
// r1 holds the handle of an array map whose values are contiguous, so the
// helper's whole work is r0 = key < MaxEntries ? Base + key*Stride : 0,
// with key the 32-bit word r2 points to (the verifier proved it readable).
type ArrayLookup struct {
	Map        int // index into the program's maps
	Base       uintptr
	Stride     uint32
	MaxEntries uint32
}

// InlineLookup reports whether the helper call at pc is an array-map lookup
// the backends may emit inline, and its map. It is when the helper is
// bpf_map_lookup_elem with package maps' semantics (vm.Helper.ArrayLookup)
// and r1 surely holds an array map's handle there: the
// last instruction that may write r1 before pc, in the same basic block (no
// jump lands between it and the call), is an LD_IMM64 of that map. Any
// other write, a call, or a path entering between makes it false: the
// helper is called as usual.
func (a *Info) InlineLookup(pc int) (ArrayLookup, bool) {
	ins := a.insns[pc]
	if helpers.ID(ins.Imm) != helpers.MapLookupElem || a.Structure.Kind(pc) != structure.HelperCall ||
		!a.prog.Helpers[helpers.MapLookupElem].ArrayLookup {
		return ArrayLookup{}, false
	}
	if a.isTarget[pc] {
		return ArrayLookup{}, false
	}
	start := int(a.FuncStart[a.FuncOf[pc]])
	for q := pc - 1; q >= start; q-- {
		if a.Second[q] {
			continue
		}
		d := a.insns[q]
		if mayWriteR1(a.Structure.Kind(q), d) {
			if a.Structure.Kind(q) != structure.LdImm64 || d.Src != asm.PseudoMapFD || d.Dst != asm.R1 {
				return ArrayLookup{}, false
			}
			return inlinable(a.prog.Maps, int(d.Imm))
		}
		if a.isTarget[q] {
			return ArrayLookup{}, false
		}
	}
	return ArrayLookup{}, false
}

// inlinable describes map i's lookup when it is a plain array with
// contiguous values and 4-byte keys.
func inlinable(maps []vm.MapRef, i int) (ArrayLookup, bool) {
	if i < 0 || i >= len(maps) {
		return ArrayLookup{}, false
	}
	m := maps[i]
	if m.Type != mapTypeArray || m.ArrayBase == 0 || m.KeySize != 4 || m.MaxEntries == 0 || m.MaxEntries >= 1<<31 {
		return ArrayLookup{}, false
	}
	stride := m.ArrayStride
	if stride == 0 {
		stride = (m.ValueSize + 7) &^ 7
	}
	if stride == 0 || stride > 1<<30 {
		return ArrayLookup{}, false
	}
	return ArrayLookup{Map: i, Base: m.ArrayBase, Stride: stride, MaxEntries: m.MaxEntries}, true
}

// mayWriteR1 reports whether the instruction (of kind k) may change r1: an
// over-approximation, so that a false answer is a proof.
func mayWriteR1(k structure.Kind, ins asm.Instruction) bool {
	switch k {
	case structure.HelperCall, structure.LocalCall, structure.Callx:
		return true // r1-r5 are the caller's scratch registers
	case structure.LdImm64:
		return ins.Dst == asm.R1
	}
	switch ins.Op.Class() {
	case asm.ClassALU, asm.ClassALU64, asm.ClassLDX, asm.ClassLD:
		return ins.Dst == asm.R1
	case asm.ClassSTX:
		// atomics with a fetch write their source register (cmpxchg: r0)
		return ins.Op.Mode() == asm.ModeAtomic && ins.Src == asm.R1
	}
	return false
}

// markTargets marks every pc some jump lands on, and each function's start.
func (a *Info) markTargets() {
	a.isTarget = make([]bool, len(a.insns))
	for _, s := range a.FuncStart {
		a.isTarget[s] = true
	}
	for pc := range a.insns {
		if k := a.Structure.Kind(pc); k.IsJump() {
			if t := a.Structure.Target(pc); t >= 0 && t < len(a.insns) {
				a.isTarget[t] = true
			}
		}
	}
}

// IsTarget reports whether a jump lands on pc or a function starts there:
// when not, pc is reached only from pc-1, so a backend may carry what it
// knows (flags, a fused instruction) from pc-1 into pc.
func (a *Info) IsTarget(pc int) bool { return a.isTarget[pc] }

package analysis

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/structure"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Lowering is a backend: the native code of each kind of instruction,
// appended to what it emitted so far. Lower hands it only instructions the
// validated structure accepted, already sorted by kind, with jump and call
// targets resolved and helpers looked up.
type Lowering interface {
	// Len is the number of bytes emitted so far.
	Len() int32
	// MainPrologue opens the outermost function (see Info.Frame).
	MainPrologue()
	// SubPrologue opens a BPF-to-BPF callee.
	SubPrologue()
	// ALU emits an ALU or ALU64 instruction.
	ALU(pc int, ins asm.Instruction) error
	// Load emits an LDX that is not folded to a constant.
	Load(pc int, ins asm.Instruction) error
	// Store emits ST, STX and atomic instructions.
	Store(pc int, ins asm.Instruction) error
	// Const sets eBPF register r to v: an LD_IMM64, or a load folded to a
	// constant (zero- or sign-extended to 64 bits already).
	Const(r asm.Register, v uint64)
	// Goto emits an unconditional jump from pc to target (never pc+1).
	Goto(pc, target int)
	// Branch emits the conditional jump ins at pc to target (never pc+1).
	Branch(pc int, ins asm.Instruction, target int) error
	// HelperCall emits a call of helper h.
	HelperCall(pc int, h vm.Helper)
	// InlineLookup emits a bpf_map_lookup_elem of an array map in place of
	// the helper call at pc (see Info.InlineLookup): r0 = the value's
	// address, or 0 for a key out of range; r1-r5 may be left as they are.
	InlineLookup(pc int, l ArrayLookup)
	// LocalCall emits a BPF-to-BPF call of the function starting at target.
	LocalCall(pc, target int)
	// Callx emits a helper call whose id is in register r.
	Callx(pc int, r asm.Register)
	// Exit returns from the current function (outermost: the program).
	Exit(outermost bool)
}

// Lower emits the program through l in pc order: the outermost prologue
// first, each callee's prologue before its first instruction. pcOff
// (len(insns)+1 entries) receives the native offset of each pc, the last
// one the end of the inline code; entryOff (one per function) that of
// each function's prologue.
//
// A jump to the next instruction emits nothing (flags are never live
// across instructions), an LD_IMM64 that only folded loads read neither.
func (a *Info) Lower(l Lowering, pcOff, entryOff []int32) error {
	n := len(a.insns)
	l.MainPrologue()
	for pc := 0; pc < n; pc++ {
		f := a.FuncOf[pc]
		if f > 0 && int(a.FuncStart[f]) == pc {
			entryOff[f] = l.Len()
			l.SubPrologue()
		}
		pcOff[pc] = l.Len()
		if err := a.lowerOne(l, pc); err != nil {
			return err
		}
		if a.Structure.Kind(pc) == structure.LdImm64 {
			pc++
			pcOff[pc] = l.Len()
		}
	}
	pcOff[n] = l.Len()
	return nil
}

// lowerOne emits the instruction at pc.
func (a *Info) lowerOne(l Lowering, pc int) error {
	ins := a.insns[pc]
	switch a.Structure.Kind(pc) {
	case structure.LdImm64:
		v, drop, err := a.LdImm64(pc)
		if err == nil && !drop {
			l.Const(ins.Dst, v)
		}
		return err
	case structure.Goto:
		if t := a.Structure.Target(pc); t != pc+1 {
			l.Goto(pc, t)
		}
		return nil
	case structure.Branch:
		if t := a.Structure.Target(pc); t != pc+1 {
			return l.Branch(pc, ins, t)
		}
		return nil
	case structure.HelperCall:
		h, err := a.Helper(pc)
		if err != nil {
			return err
		}
		if al, ok := a.InlineLookup(pc); ok {
			l.InlineLookup(pc, al)
			return nil
		}
		l.HelperCall(pc, h)
		return nil
	case structure.LocalCall:
		l.LocalCall(pc, a.Structure.Target(pc))
		return nil
	case structure.Callx:
		l.Callx(pc, ins.Dst)
		return nil
	case structure.Exit:
		l.Exit(a.FuncOf[pc] == 0)
		return nil
	}
	switch ins.Op.Class() {
	case asm.ClassALU, asm.ClassALU64:
		return l.ALU(pc, ins)
	case asm.ClassLDX:
		if a.Folded != nil && a.Folded[pc] {
			l.Const(ins.Dst, a.FoldVal[pc]) // a frozen map's value (fold.go)
			return nil
		}
		return l.Load(pc, ins)
	case asm.ClassST, asm.ClassSTX:
		return l.Store(pc, ins)
	}
	return ErrAt(pc, ins, "unknown instruction class")
}

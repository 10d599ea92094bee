package analysis

import (
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Constant loads from frozen read-only maps.
//
// libbpf's .rodata (volatile const tunables) is a one-entry array that is
// frozen for the control plane and read-only for programs: its contents
// never change once the program is compiled. A load through
// "lddw rX, map_value(i)+off" from such a map is therefore a constant, and
// the JITs emit a move of the value instead of the memory load. rX is tracked
// forward from the lddw while it certainly still holds the pointer: no
// write to rX, no jump target (or function entry) in between; a
// conditional jump keeps the state on its fall-through path, whose only
// predecessor it is, and calls clobber r0..r5. The lddw itself is not
// emitted when rX is dead after it (written before any read on the
// straight-line code that follows, or not r0 at an exit).

// mapTypeArray is BPF_MAP_TYPE_ARRAY (Linux's enum bpf_map_type).
const mapTypeArray = 2

// constMap reports whether the values of m never change after compilation
// and can be read through m.ArrayBase: a frozen, program-read-only array.
func constMap(m vm.MapRef) bool {
	return m.Frozen && m.ReadOnly && m.Type == mapTypeArray && m.ArrayBase != 0 &&
		m.ValueSize > 0 && m.MaxEntries > 0
}

// constPtr is what the fold analysis knows about a register: it holds
// ArrayBase+off of map index m (valid when ok).
type constPtr struct {
	ok  bool
	m   int32
	off int64
}

// foldConstLoads fills a.FoldVal/a.Folded (loads replaced by a constant)
// and a.DropLd (lddws not emitted).
func (a *Info) foldConstLoads() {
	maps := a.prog.Maps
	have := false
	for _, m := range maps {
		if constMap(m) {
			have = true
			break
		}
	}
	if !have {
		return
	}
	n := len(a.insns)
	target := make([]bool, n)
	for _, s := range a.FuncStart {
		target[s] = true
	}
	for pc := 0; pc < n; pc++ {
		if a.Structure.Kind(pc).IsJump() {
			target[a.Structure.Target(pc)] = true
		}
	}

	var st [asm.NumRegisters]constPtr
	clearAll := func() { st = [asm.NumRegisters]constPtr{} }
	for pc := 0; pc < n; pc++ {
		if a.Second[pc] {
			continue
		}
		if target[pc] {
			clearAll()
		}
		ins := a.insns[pc]
		switch cl := ins.Op.Class(); {
		case ins.IsLdImm64():
			st[ins.Dst] = constPtr{}
			if ins.Src == asm.PseudoMapValue && ins.Imm >= 0 && int(ins.Imm) < len(maps) && constMap(maps[ins.Imm]) {
				st[ins.Dst] = constPtr{ok: true, m: ins.Imm, off: int64(uint32(a.insns[pc+1].Imm))}
			}
		case cl == asm.ClassLDX:
			if p := st[ins.Src]; p.ok {
				if v, ok := readConst(maps[p.m], p.off+int64(ins.Off), ins); ok {
					if a.Folded == nil {
						a.Folded = make([]bool, n)
						a.FoldVal = make([]uint64, n)
						a.DropLd = make([]bool, n)
					}
					a.Folded[pc], a.FoldVal[pc] = true, v
				}
			}
			st[ins.Dst] = constPtr{}
		case cl == asm.ClassALU || cl == asm.ClassALU64:
			st[ins.Dst] = constPtr{}
		case cl == asm.ClassST:
		case cl == asm.ClassSTX:
			if ins.Op.Mode() != asm.ModeMEM { // atomics may write src or r0
				st[ins.Src], st[0] = constPtr{}, constPtr{}
			}
		case cl.IsJump():
			switch ins.Op.JumpOp() {
			case asm.JumpCall:
				for r := 0; r <= 5; r++ {
					st[r] = constPtr{}
				}
			case asm.JumpExit, asm.JumpA:
				clearAll()
			}
		default:
			clearAll()
		}
	}
	if a.Folded == nil {
		return
	}
	for pc := 0; pc < n; pc++ {
		ins := a.insns[pc]
		if !a.Second[pc] && ins.IsLdImm64() && ins.Src == asm.PseudoMapValue && a.usedOnlyByFolds(pc, ins.Dst, target) {
			a.DropLd[pc] = true
		}
	}
}

// usedOnlyByFolds reports whether register r, written by the lddw at pc,
// is dead: on the straight-line code after it (no jump target, no branch)
// it is overwritten before anything but a folded load reads it, or the
// program exits with r other than r0.
func (a *Info) usedOnlyByFolds(pc int, r asm.Register, target []bool) bool {
	n := len(a.insns)
	for q := pc + 2; q < n; q++ {
		if target[q] {
			return false
		}
		ins := a.insns[q]
		if a.Folded[q] {
			if ins.Dst == r {
				return true
			}
			continue
		}
		cl := ins.Op.Class()
		switch {
		case ins.IsLdImm64():
			if ins.Dst == r {
				return true
			}
			q++
		case cl == asm.ClassLDX:
			if ins.Src == r {
				return false
			}
			if ins.Dst == r {
				return true
			}
		case cl == asm.ClassALU || cl == asm.ClassALU64:
			if ins.Op.Source() == asm.SourceX && ins.Src == r && ins.Op.ALUOp() != asm.ALUNeg && ins.Op.ALUOp() != asm.ALUEnd {
				return false
			}
			if ins.Dst == r {
				return ins.Op.ALUOp() == asm.ALUMov
			}
		case cl == asm.ClassST:
			if ins.Dst == r {
				return false
			}
		case cl == asm.ClassSTX:
			if ins.Dst == r || ins.Src == r || (ins.Op.Mode() != asm.ModeMEM && r == 0) {
				return false
			}
		case cl.IsJump():
			switch {
			case ins.Op.JumpOp() == asm.JumpExit:
				return r != 0
			case ins.Op == asm.OpCall:
				if r >= 1 && r <= 5 {
					return false // an argument
				}
				if r == 0 {
					return true // the result overwrites it
				}
			default:
				return false // branches and callx: stay conservative
			}
		default:
			return false
		}
	}
	return false
}

// readConst reads the value that load ins sees at byte a of map m's values,
// zero- or sign-extended as the load does. ok is false where the access is
// not wholly inside one value.
func readConst(m vm.MapRef, a int64, ins asm.Instruction) (v uint64, ok bool) {
	mode := ins.Op.Mode()
	if mode != asm.ModeMEM && mode != asm.ModeMEMSX {
		return 0, false
	}
	size := int64(ins.Op.Size().Bytes())
	if mode == asm.ModeMEMSX && size == 8 {
		return 0, false
	}
	stride := int64(m.ArrayStride)
	if stride == 0 {
		stride = (int64(m.ValueSize) + 7) &^ 7
	}
	if a < 0 || stride < int64(m.ValueSize) {
		return 0, false
	}
	idx, within := a/stride, a%stride
	if idx >= int64(m.MaxEntries) || within+size > int64(m.ValueSize) {
		return 0, false
	}
	src := unsafe.Slice((*byte)(addrPointer(m.ArrayBase+uintptr(a))), size)
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint64(src[i])
	}
	if mode == asm.ModeMEMSX {
		shift := 64 - 8*size
		v = uint64(int64(v<<shift) >> shift)
	}
	return v, true
}

// addrPointer turns the address of C-owned memory into a pointer without a
// uintptr-to-pointer conversion that vet would flag (the garbage collector
// has nothing to track there).
func addrPointer(a uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}

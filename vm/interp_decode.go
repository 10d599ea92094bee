package vm

import (
	"fmt"
	"slices"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/structure"
)

// decode takes p's validated structure (Program.Validate) and fills
// x.code, x.helpers, x.byID and the array regions of map-value loads: it
// resolves jump and call targets, helper calls and LD_IMM64 values, and
// rejects what this interpreter cannot run: missing helpers, map-value
// loads of maps without contiguous values.
func (x *interpExec) decode(p *Program) error {
	n := len(p.Insns)
	if n == 0 {
		return fmt.Errorf("interp: program %q: no instructions: %w", p.Name, ErrInvalidProgram)
	}
	if n > MaxInstructions {
		return fmt.Errorf("interp: program %q: %d instructions, more than %d: %w", p.Name, n, MaxInstructions, ErrInvalidProgram)
	}
	sp, serr := p.Validate()
	if serr != nil {
		return &CompileError{Program: p.Name, PC: serr.PC, Insn: p.Insns[serr.PC], Reason: serr.Msg}
	}
	x.byID = make(HelperTable, len(p.Helpers))
	for id, h := range p.Helpers {
		if h.ID != id {
			return fmt.Errorf("interp: program %q: helper table entry %d holds helper %d: %w", p.Name, id, h.ID, ErrInvalidProgram)
		}
		if h.Addr == 0 {
			return fmt.Errorf("interp: program %q: helper %v has no address: %w", p.Name, id, ErrInvalidProgram)
		}
		x.byID[id] = h
	}
	x.code = make([]insn, n)
	helperIndex := map[helpers.ID]int32{}
	var arrays []int // maps referenced by map-value loads, in order
	for pc := 0; pc < n; pc++ {
		if sp.IsSecond(pc) {
			continue
		}
		in := p.Insns[pc]
		d := &x.code[pc]
		*d = insn{op: in.Op, dst: uint8(in.Dst), src: uint8(in.Src), off: in.Off, imm: in.Imm, k: uint64(int64(in.Imm))}
		bad := func(format string, args ...any) error {
			return &CompileError{Program: p.Name, PC: pc, Insn: in, Reason: fmt.Sprintf(format, args...)}
		}
		if t := sp.Target(pc); t >= 0 {
			d.aux = int32(t)
		}
		switch sp.Kind(pc) {
		case structure.LdImm64:
			if err := x.ldImm64(p, pc, &arrays); err != nil {
				return bad("%v", err)
			}
		case structure.HelperCall:
			id := helpers.ID(in.Imm)
			h, ok := x.byID[id]
			if !ok {
				return bad("call to unknown helper %v (id %d)", id, in.Imm)
			}
			idx, seen := helperIndex[id]
			if !seen {
				idx = int32(len(x.helpers))
				helperIndex[id] = idx
				x.helpers = append(x.helpers, h)
			}
			d.aux = idx
		}
		d.fop = fastOp(in)
		if c := in.Op.Class(); c == asm.ClassLDX || c == asm.ClassST || c == asm.ClassSTX {
			d.aux = int32(in.Op.Size().Bytes())
		}
	}
	for _, idx := range arrays {
		m := p.Maps[idx]
		x.static = append(x.static, nativeRegion(uint64(m.ArrayBase), arraySize(m), !m.ReadOnly))
	}
	return nil
}

// arraySize is the number of bytes from a map's ArrayBase to the end of its
// last value.
func arraySize(m MapRef) uint64 {
	return uint64(arrayStride(m)) * uint64(m.MaxEntries)
}

func arrayStride(m MapRef) uint32 {
	if m.ArrayStride != 0 {
		return m.ArrayStride
	}
	return (m.ValueSize + 7) &^ 7
}

// ldImm64 resolves the value of the (validated) LD_IMM64 at pc into
// x.code[pc].k.
func (x *interpExec) ldImm64(p *Program, pc int, arrays *[]int) error {
	in := p.Insns[pc]
	next := p.Insns[pc+1]
	d := &x.code[pc]
	switch in.Src {
	case 0:
		d.k, _ = asm.Imm64(p.Insns, pc)
	case asm.PseudoMapFD, asm.PseudoMapValue:
		idx := int(in.Imm)
		m := p.Maps[idx]
		if in.Src == asm.PseudoMapFD {
			d.k = uint64(m.Handle)
			return nil
		}
		if m.ArrayBase == 0 {
			return fmt.Errorf("LD_IMM64 map-value of map %q, which has no contiguous values", m.Name)
		}
		off := uint64(uint32(next.Imm))
		if off >= arraySize(m) {
			return fmt.Errorf("LD_IMM64 map-value offset %d is beyond map %q (%d bytes)", off, m.Name, arraySize(m))
		}
		d.k = uint64(m.ArrayBase) + off
		if !slices.Contains(*arrays, idx) {
			*arrays = append(*arrays, idx)
		}
	}
	return nil
}

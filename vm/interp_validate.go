package vm

import (
	"fmt"
	"slices"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
)

// decode validates p's instructions and fills x.code, x.helpers, x.byID and
// the array regions of map-value loads. It checks enough that Run never
// meets an instruction it cannot execute: unknown opcodes, registers above
// r10, writes to r10, reserved fields that are set, jumps outside the
// program or into the middle of an LD_IMM64, truncated LD_IMM64, missing
// helpers and maps, and control flow that falls off the end.
func (x *interpExec) decode(p *Program) error {
	n := len(p.Insns)
	if n == 0 {
		return fmt.Errorf("interp: program %q: no instructions: %w", p.Name, ErrInvalidProgram)
	}
	if n > MaxInstructions {
		return fmt.Errorf("interp: program %q: %d instructions, more than %d: %w", p.Name, n, MaxInstructions, ErrInvalidProgram)
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
	second := make([]bool, n) // second slots of LD_IMM64
	helperIndex := map[helpers.ID]int32{}
	var arrays []int // maps referenced by map-value loads, in order
	for pc := 0; pc < n; pc++ {
		in := p.Insns[pc]
		d := &x.code[pc]
		*d = insn{op: in.Op, dst: uint8(in.Dst), src: uint8(in.Src), off: in.Off, imm: in.Imm, k: uint64(int64(in.Imm))}
		bad := func(format string, args ...any) error {
			return &CompileError{Program: p.Name, PC: pc, Insn: in, Reason: fmt.Sprintf(format, args...)}
		}
		if in.Dst > asm.R10 || in.Src > asm.R10 {
			return bad("register out of range (dst %d, src %d)", in.Dst, in.Src)
		}
		var err error
		switch c := in.Op.Class(); c {
		case asm.ClassALU, asm.ClassALU64:
			err = checkALU(in, c)
		case asm.ClassJMP, asm.ClassJMP32:
			err = checkJump(in, c)
		case asm.ClassLDX:
			err = checkLoad(in)
		case asm.ClassST, asm.ClassSTX:
			err = checkStore(in, c)
		case asm.ClassLD:
			err = x.checkLdImm64(p, pc, &arrays)
			if err == nil {
				second[pc+1] = true
				pc++ // the second slot is consumed
			}
		}
		if err != nil {
			return bad("%v", err)
		}
		d.fop = fastOp(in)
		if c := in.Op.Class(); c == asm.ClassLDX || c == asm.ClassST || c == asm.ClassSTX {
			d.aux = int32(in.Op.Size().Bytes())
		}
		if in.Op == asm.OpCall && in.Src == asm.PseudoHelper {
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
	}
	if err := x.checkControlFlow(p, second); err != nil {
		return err
	}
	for _, idx := range arrays {
		m := p.Maps[idx]
		x.static = append(x.static, nativeRegion(uint64(m.ArrayBase), arraySize(m), !m.ReadOnly))
	}
	return nil
}

// checkControlFlow resolves jump and call targets into x.code[pc].aux and
// checks the program's structure as Linux does: every target is an
// instruction (not outside the program, not the second slot of an
// LD_IMM64); the program is cut into subprograms at pc 0 and at each
// BPF-to-BPF call target, jumps stay inside their subprogram, and no
// subprogram falls through into the next one or off the end.
func (x *interpExec) checkControlFlow(p *Program, second []bool) error {
	n := len(p.Insns)
	isStart := make([]bool, n)
	isStart[0] = true
	type jump struct{ from, to int }
	var jumps []jump
	for pc := 0; pc < n; pc++ {
		if second[pc] {
			continue
		}
		in := p.Insns[pc]
		bad := func(format string, args ...any) error {
			return &CompileError{Program: p.Name, PC: pc, Insn: in, Reason: fmt.Sprintf(format, args...)}
		}
		next := pc + 1
		if in.Op == asm.OpLdImm64 {
			next = pc + 2
		}
		falls := true
		if in.Op.Class().IsJump() {
			target := int64(pc) + 1 + int64(in.Off)
			hasTarget := true
			switch {
			case in.Op == asm.OpExit:
				falls, hasTarget = false, false
			case in.Op == asm.OpCallX || (in.Op == asm.OpCall && in.Src == asm.PseudoHelper):
				hasTarget = false
			case in.Op == asm.OpCall: // BPF-to-BPF
				target = int64(pc) + 1 + int64(in.Imm)
			case in.Op == asm.OpJa32:
				target = int64(pc) + 1 + int64(in.Imm)
				falls = false
			case in.Op == asm.OpJa:
				falls = false
			}
			if hasTarget {
				if target < 0 || target >= int64(n) {
					return bad("jump target %d is outside the program (0..%d)", target, n-1)
				}
				if second[target] {
					return bad("jump target %d is the second slot of an LD_IMM64", target)
				}
				x.code[pc].aux = int32(target)
				if in.Op == asm.OpCall {
					isStart[target] = true
				} else {
					jumps = append(jumps, jump{pc, int(target)})
				}
			}
		}
		if falls && next >= n {
			return bad("execution falls off the end of the program")
		}
	}
	// sub[pc] is the start of the subprogram that contains pc.
	sub := make([]int32, n)
	cur := int32(0)
	for pc := range n {
		if isStart[pc] {
			cur = int32(pc)
		}
		sub[pc] = cur
	}
	for _, j := range jumps {
		if sub[j.from] != sub[j.to] {
			return &CompileError{Program: p.Name, PC: j.from, Insn: p.Insns[j.from],
				Reason: fmt.Sprintf("jump to pc %d leaves the subprogram starting at pc %d", j.to, sub[j.from])}
		}
	}
	for pc := 1; pc < n; pc++ {
		if !isStart[pc] {
			continue
		}
		last := pc - 1
		if last > 0 && second[last] {
			last--
		}
		switch op := p.Insns[last].Op; {
		case op == asm.OpExit, op == asm.OpJa, op == asm.OpJa32:
		default:
			return &CompileError{Program: p.Name, PC: last, Insn: p.Insns[last],
				Reason: fmt.Sprintf("execution falls through into the subprogram at pc %d (a subprogram must end with exit or ja)", pc)}
		}
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

func checkALU(in asm.Instruction, c asm.Class) error {
	x := in.Op.Source() == asm.SourceX
	op := in.Op.ALUOp()
	if in.Dst == asm.R10 {
		return fmt.Errorf("%v writes the read-only frame pointer r10", op32or64(c))
	}
	switch op {
	case asm.ALUAdd, asm.ALUSub, asm.ALUMul, asm.ALUOr, asm.ALUAnd, asm.ALULsh,
		asm.ALURsh, asm.ALUXor, asm.ALUArsh:
		if in.Off != 0 {
			return fmt.Errorf("ALU operation %#x with nonzero offset %d", uint8(op), in.Off)
		}
	case asm.ALUDiv, asm.ALUMod:
		if in.Off != 0 && in.Off != 1 {
			return fmt.Errorf("division/modulo offset must be 0 (unsigned) or 1 (signed), not %d", in.Off)
		}
	case asm.ALUNeg:
		if x || in.Src != 0 || in.Off != 0 || in.Imm != 0 {
			return fmt.Errorf("neg uses reserved fields (source, src, offset and imm must be 0)")
		}
		return nil
	case asm.ALUMov:
		switch {
		case in.Off == 0:
		case x && (in.Off == 8 || in.Off == 16):
		case x && in.Off == 32 && c == asm.ClassALU64:
		default:
			return fmt.Errorf("mov with invalid sign-extension offset %d for %v", in.Off, op32or64(c))
		}
	case asm.ALUEnd:
		if in.Src != 0 || in.Off != 0 {
			return fmt.Errorf("byte swap uses reserved fields (src, offset)")
		}
		if c == asm.ClassALU64 && x {
			return fmt.Errorf("bswap (ALU64 END) must use source K")
		}
		if in.Imm != 16 && in.Imm != 32 && in.Imm != 64 {
			return fmt.Errorf("byte swap width %d is not 16, 32 or 64", in.Imm)
		}
		return nil
	default:
		return fmt.Errorf("unknown ALU operation %#x", uint8(op))
	}
	if x && in.Imm != 0 {
		return fmt.Errorf("register-source ALU operation with nonzero imm %d", in.Imm)
	}
	if !x && in.Src != 0 {
		return fmt.Errorf("immediate-source ALU operation with nonzero src register %d", in.Src)
	}
	return nil
}

func op32or64(c asm.Class) string {
	if c == asm.ClassALU {
		return "alu32"
	}
	return "alu64"
}

func checkJump(in asm.Instruction, c asm.Class) error {
	x := in.Op.Source() == asm.SourceX
	switch op := in.Op.JumpOp(); op {
	case asm.JumpA:
		if x || in.Src != 0 || in.Dst != 0 {
			return fmt.Errorf("ja uses reserved fields")
		}
		if c == asm.ClassJMP && in.Imm != 0 {
			return fmt.Errorf("ja with nonzero imm %d (gotol is JMP32|JA)", in.Imm)
		}
		if c == asm.ClassJMP32 && in.Off != 0 {
			return fmt.Errorf("gotol with nonzero offset %d", in.Off)
		}
	case asm.JumpExit:
		if c != asm.ClassJMP || x || in.Src != 0 || in.Dst != 0 || in.Off != 0 || in.Imm != 0 {
			return fmt.Errorf("exit uses reserved fields or class jmp32")
		}
	case asm.JumpCall:
		if c != asm.ClassJMP {
			return fmt.Errorf("call in class jmp32")
		}
		if in.Off != 0 {
			return fmt.Errorf("call with nonzero offset %d", in.Off)
		}
		if x { // callx: the helper id is the value of register dst
			if in.Src != 0 || in.Imm != 0 {
				return fmt.Errorf("callx takes its register in dst; src and imm must be 0")
			}
			return nil
		}
		if in.Dst != 0 {
			return fmt.Errorf("call with nonzero dst register")
		}
		if in.Src != asm.PseudoHelper && in.Src != asm.PseudoCall {
			return fmt.Errorf("call with unsupported src %d (only helper ids and local calls)", in.Src)
		}
	case asm.JumpEq, asm.JumpGT, asm.JumpGE, asm.JumpSet, asm.JumpNE, asm.JumpSGT,
		asm.JumpSGE, asm.JumpLT, asm.JumpLE, asm.JumpSLT, asm.JumpSLE:
		if x && in.Imm != 0 {
			return fmt.Errorf("register-source jump with nonzero imm %d", in.Imm)
		}
		if !x && in.Src != 0 {
			return fmt.Errorf("immediate-source jump with nonzero src register %d", in.Src)
		}
	default:
		return fmt.Errorf("unknown jump operation %#x", uint8(op))
	}
	return nil
}

func checkLoad(in asm.Instruction) error {
	switch in.Op.Mode() {
	case asm.ModeMEM:
	case asm.ModeMEMSX:
		if in.Op.Size() == asm.SizeDW {
			return fmt.Errorf("sign-extending load of a double word")
		}
	default:
		return fmt.Errorf("unsupported load mode %#x", uint8(in.Op.Mode()))
	}
	if in.Dst == asm.R10 {
		return fmt.Errorf("load into the read-only frame pointer r10")
	}
	if in.Imm != 0 {
		return fmt.Errorf("load with nonzero imm %d", in.Imm)
	}
	return nil
}

func checkStore(in asm.Instruction, c asm.Class) error {
	switch in.Op.Mode() {
	case asm.ModeMEM:
		if c == asm.ClassST && in.Src != 0 {
			return fmt.Errorf("store-immediate with nonzero src register %d", in.Src)
		}
		if c == asm.ClassSTX && in.Imm != 0 {
			return fmt.Errorf("store with nonzero imm %d", in.Imm)
		}
		return nil
	case asm.ModeAtomic:
		if c != asm.ClassSTX {
			return fmt.Errorf("atomic operation in class st")
		}
		if s := in.Op.Size(); s != asm.SizeW && s != asm.SizeDW {
			return fmt.Errorf("atomic operation of %d bytes (only 4 and 8)", s.Bytes())
		}
		switch in.Imm {
		case asm.AtomicAdd, asm.AtomicOr, asm.AtomicAnd, asm.AtomicXor:
		case asm.AtomicAdd | asm.AtomicFetch, asm.AtomicOr | asm.AtomicFetch,
			asm.AtomicAnd | asm.AtomicFetch, asm.AtomicXor | asm.AtomicFetch, asm.AtomicXchg:
			if in.Src == asm.R10 {
				return fmt.Errorf("atomic fetch into the read-only frame pointer r10")
			}
		case asm.AtomicCmpXchg:
		default:
			return fmt.Errorf("unknown atomic operation %#x", in.Imm)
		}
		return nil
	}
	return fmt.Errorf("unsupported store mode %#x", uint8(in.Op.Mode()))
}

// checkLdImm64 validates the LD_IMM64 at pc and resolves its value into
// x.code[pc].k.
func (x *interpExec) checkLdImm64(p *Program, pc int, arrays *[]int) error {
	in := p.Insns[pc]
	if in.Op != asm.OpLdImm64 {
		return fmt.Errorf("unsupported load opcode %#02x (legacy packet access and other LD forms are not supported)", uint8(in.Op))
	}
	if pc+1 >= len(p.Insns) {
		return fmt.Errorf("LD_IMM64 is truncated: its second slot is missing")
	}
	next := p.Insns[pc+1]
	if next.Op != 0 || next.Dst != 0 || next.Src != 0 || next.Off != 0 {
		return fmt.Errorf("LD_IMM64 second slot has nonzero opcode or fields")
	}
	if in.Dst == asm.R10 {
		return fmt.Errorf("LD_IMM64 into the read-only frame pointer r10")
	}
	if in.Off != 0 {
		return fmt.Errorf("LD_IMM64 with nonzero offset %d", in.Off)
	}
	d := &x.code[pc]
	switch in.Src {
	case 0:
		d.k, _ = asm.Imm64(p.Insns, pc)
	case asm.PseudoMapFD, asm.PseudoMapValue:
		idx := int(in.Imm)
		if idx < 0 || idx >= len(p.Maps) {
			return fmt.Errorf("LD_IMM64 refers to map %d, program has %d maps", idx, len(p.Maps))
		}
		m := p.Maps[idx]
		if in.Src == asm.PseudoMapFD {
			if next.Imm != 0 {
				return fmt.Errorf("LD_IMM64 map-fd with nonzero second imm %d", next.Imm)
			}
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
	default:
		return fmt.Errorf("LD_IMM64 with unsupported src %d", in.Src)
	}
	return nil
}

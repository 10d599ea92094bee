package asm

import (
	"fmt"
	"strings"
)

// Format disassembles insns into the text dialect that Assemble reads: one
// line per instruction (an LD_IMM64 is one line for its two slots), each
// ending in a newline. Jump and call targets are printed as signed slot
// offsets ("+3"), so Assemble(Format(insns)) returns insns again, also for
// instructions that have no mnemonic (printed as ".insn 0x...").
func Format(insns []Instruction) string {
	var b strings.Builder
	for pc := 0; pc < len(insns); {
		text, width := FormatAt(insns, pc)
		b.WriteString(text)
		b.WriteByte('\n')
		pc += width
	}
	return b.String()
}

// FormatAt disassembles the instruction at pc and returns its text (no
// newline) and how many slots it occupies: 2 for a complete LD_IMM64, 1
// otherwise. It returns ("", 0) when pc is out of range.
//
// An instruction that the dialect cannot write exactly (an unknown opcode,
// or a set field that its form does not use) is printed as ".insn WORD", so
// that reassembling the text always gives the same slots back.
func FormatAt(insns []Instruction, pc int) (text string, width int) {
	if pc < 0 || pc >= len(insns) {
		return "", 0
	}
	ins := insns[pc]
	if ins.IsLdImm64() && pc+1 < len(insns) {
		if t, ok := formatLdImm64(ins, insns[pc+1]); ok && reassembles(t, insns[pc:pc+2]) {
			return t, 2
		}
		return formatRaw(ins), 1
	}
	if t, ok := formatInstruction(ins); ok && reassembles(t, insns[pc:pc+1]) {
		return t, 1
	}
	return formatRaw(ins), 1
}

// reassembles reports whether text assembles to exactly want: whether the
// text shows every bit of the instruction.
func reassembles(text string, want []Instruction) bool {
	got, _, err := parseInstruction(text)
	if err != nil || len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func formatRaw(ins Instruction) string { return fmt.Sprintf(".insn %#016x", ins.Word()) }

func formatLdImm64(lo, hi Instruction) (string, bool) {
	switch lo.Src {
	case 0:
		v := uint64(uint32(lo.Imm)) | uint64(uint32(hi.Imm))<<32
		if v <= 4096 {
			return fmt.Sprintf("lddw %%r%d, %d", lo.Dst, v), true
		}
		return fmt.Sprintf("lddw %%r%d, %#x", lo.Dst, v), true
	case PseudoMapFD:
		return fmt.Sprintf("lddw %%r%d, map(%d)", lo.Dst, lo.Imm), true
	case PseudoMapValue:
		return fmt.Sprintf("lddw %%r%d, map_value(%d)%+d", lo.Dst, lo.Imm, hi.Imm), true
	}
	return "", false
}

// formatImm prints small values in decimal, others in hex; unsigned32
// prints large negative values as their 32-bit pattern (for 32-bit
// operations, where that is the value the instruction works with).
func formatImm(v int32, unsigned32 bool) string {
	switch {
	case v >= -4096 && v <= 4096:
		return fmt.Sprint(v)
	case v < 0 && unsigned32:
		return fmt.Sprintf("%#x", uint32(v))
	case v < 0:
		return fmt.Sprintf("-%#x", -int64(v))
	}
	return fmt.Sprintf("%#x", v)
}

func formatMemory(r Register, off int16) string {
	if off == 0 {
		return fmt.Sprintf("[%%r%d]", r)
	}
	return fmt.Sprintf("[%%r%d%+d]", r, off)
}

func formatInstruction(ins Instruction) (string, bool) {
	op := ins.Op
	switch c := op.Class(); c {
	case ClassALU, ClassALU64:
		return formatALU(ins)
	case ClassJMP, ClassJMP32:
		return formatJump(ins)
	case ClassLD:
		size, ok := sizeNames[op.Size()]
		switch {
		case !ok:
			return "", false
		case op.Mode() == ModeABS:
			return fmt.Sprintf("ldabs%s %s", size, formatImm(ins.Imm, false)), true
		case op.Mode() == ModeIND:
			return fmt.Sprintf("ldind%s %%r%d, %s", size, ins.Src, formatImm(ins.Imm, false)), true
		}
		return "", false // LD_IMM64 without its second slot, or an unknown mode
	case ClassLDX:
		switch op.Mode() {
		case ModeMEM:
			return fmt.Sprintf("ldx%s %%r%d, %s", sizeNames[op.Size()], ins.Dst, formatMemory(ins.Src, ins.Off)), true
		case ModeMEMSX:
			return fmt.Sprintf("ldxs%s %%r%d, %s", sizeNames[op.Size()], ins.Dst, formatMemory(ins.Src, ins.Off)), true
		}
	case ClassST:
		if op.Mode() == ModeMEM {
			return fmt.Sprintf("st%s %s, %s", sizeNames[op.Size()], formatMemory(ins.Dst, ins.Off), formatImm(ins.Imm, false)), true
		}
	case ClassSTX:
		switch op.Mode() {
		case ModeMEM:
			return fmt.Sprintf("stx%s %s, %%r%d", sizeNames[op.Size()], formatMemory(ins.Dst, ins.Off), ins.Src), true
		case ModeAtomic:
			return formatAtomic(ins)
		}
	}
	return "", false
}

func formatAtomic(ins Instruction) (string, bool) {
	width := ""
	switch ins.Op.Size() {
	case SizeW:
		width = "32"
	case SizeDW:
	default:
		return "", false
	}
	fetch := ""
	name, ok := atomicNames[ins.Imm]
	if !ok && ins.Imm&AtomicFetch != 0 {
		name, ok = atomicNames[ins.Imm&^AtomicFetch]
		fetch = "fetch "
	}
	if !ok {
		return "", false
	}
	return fmt.Sprintf("lock %s%s%s %s, %%r%d", fetch, name, width, formatMemory(ins.Dst, ins.Off), ins.Src), true
}

func formatALU(ins Instruction) (string, bool) {
	op := ins.Op
	is32 := op.Class() == ClassALU
	suffix := ""
	if is32 {
		suffix = "32"
	}
	switch op.ALUOp() {
	case ALUEnd:
		switch {
		case is32 && op.Source() == SourceK:
			return fmt.Sprintf("le%d %%r%d", ins.Imm, ins.Dst), true
		case is32:
			return fmt.Sprintf("be%d %%r%d", ins.Imm, ins.Dst), true
		case op.Source() == SourceK:
			return fmt.Sprintf("bswap%d %%r%d", ins.Imm, ins.Dst), true
		}
		return "", false
	case ALUNeg:
		return fmt.Sprintf("neg%s %%r%d", suffix, ins.Dst), true
	}
	name, ok := aluNames[op.ALUOp()]
	if !ok {
		return "", false
	}
	switch {
	case op.ALUOp() == ALUMov && ins.Off != 0:
		to := "64"
		if is32 {
			to = "32"
		}
		return fmt.Sprintf("movsx%d%s %%r%d, %%r%d", ins.Off, to, ins.Dst, ins.Src), true
	case op.ALUOp() == ALUDiv && ins.Off == 1:
		name = "sdiv"
	case op.ALUOp() == ALUMod && ins.Off == 1:
		name = "smod"
	}
	if op.Source() == SourceX {
		return fmt.Sprintf("%s%s %%r%d, %%r%d", name, suffix, ins.Dst, ins.Src), true
	}
	return fmt.Sprintf("%s%s %%r%d, %s", name, suffix, ins.Dst, formatImm(ins.Imm, is32)), true
}

func formatJump(ins Instruction) (string, bool) {
	op := ins.Op
	is32 := op.Class() == ClassJMP32
	switch op.JumpOp() {
	case JumpA:
		if is32 {
			return fmt.Sprintf("ja32 %+d", ins.Imm), true
		}
		return fmt.Sprintf("ja %+d", ins.Off), true
	case JumpExit:
		return "exit", !is32
	case JumpCall:
		switch {
		case is32:
			return "", false
		case op.Source() == SourceX:
			return fmt.Sprintf("call %%r%d", ins.Dst), true
		case ins.Src == PseudoHelper:
			return fmt.Sprintf("call %d", ins.Imm), true
		case ins.Src == PseudoCall:
			return fmt.Sprintf("call local %+d", ins.Imm), true
		case ins.Src == 2:
			return fmt.Sprintf("call runtime %d", ins.Imm), true
		}
		return "", false
	}
	name, ok := jumpNames[op.JumpOp()]
	if !ok {
		return "", false
	}
	if is32 {
		name += "32"
	}
	if op.Source() == SourceX {
		return fmt.Sprintf("%s %%r%d, %%r%d, %+d", name, ins.Dst, ins.Src, ins.Off), true
	}
	return fmt.Sprintf("%s %%r%d, %s, %+d", name, ins.Dst, formatImm(ins.Imm, is32), ins.Off), true
}

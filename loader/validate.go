package loader

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
)

// validate checks the invariants every later stage relies on without
// re-checking: the slices line up, every LD_IMM64 is complete and its
// pseudo references are valid, every jump lands on an instruction of its
// own function, and every BPF-to-BPF call lands on the first slot of a
// function.
// It does not judge the program's safety: that is the verifier's job.
func (p *ProgramSpec) validate(maps []*MapSpec) error {
	n := len(p.Insns)
	if n == 0 {
		return structErr(-1, codeMissingExit, "the program has no instructions")
	}
	if len(p.Lines) != n {
		return structErr(-1, codeInvalidOpcode, "%d line entries for %d instructions", len(p.Lines), n)
	}
	if len(p.Funcs) == 0 || p.Funcs[0].Start != 0 || p.Funcs[0].Name != p.Name || p.Funcs[len(p.Funcs)-1].End != n {
		return structErr(-1, codeInvalidOpcode, "the function table does not cover the instructions")
	}
	funcStart := make(map[int]bool, len(p.Funcs))
	for i, f := range p.Funcs {
		if f.Start >= f.End || (i > 0 && f.Start != p.Funcs[i-1].End) {
			return structErr(f.Start, codeBadJumpTarget, "function %q: bad extent [%d, %d)", f.Name, f.Start, f.End)
		}
		funcStart[f.Start] = true
	}

	// Second slots of LD_IMM64 are not instructions: nothing may jump there.
	second := make([]bool, n)
	for pc := 0; pc < n; pc++ {
		ins := p.Insns[pc]
		if !ins.IsLdImm64() {
			continue
		}
		if f := p.FuncAt(pc); pc+1 >= n || f == nil || f.End == pc+1 {
			return structErr(pc, codeInvalidOpcode, "LD_IMM64 without its second slot")
		}
		if lo := p.Insns[pc+1]; lo.Op != 0 || lo.Dst != 0 || lo.Src != 0 || lo.Off != 0 {
			return structErr(pc+1, codeInvalidOpcode, "second slot of LD_IMM64 has non-zero fields")
		}
		switch ins.Src {
		case 0:
		case asm.PseudoMapFD, asm.PseudoMapValue:
			if ins.Imm < 0 || int(ins.Imm) >= len(maps) {
				return structErr(pc, codeBadMapRef, "map index %d out of range (%d maps)", ins.Imm, len(maps))
			}
			if ins.Src == asm.PseudoMapValue {
				m := maps[ins.Imm]
				if off := uint32(p.Insns[pc+1].Imm); !m.IsGlobalData() || off >= m.ValueSize {
					return structErr(pc, codeBadMapRef, "value offset %d outside map %q", off, m.Name)
				}
			}
		default:
			return structErr(pc, codeInvalidOpcode, "LD_IMM64 with unknown pseudo source %d", ins.Src)
		}
		second[pc+1] = true
		pc++
	}

	for pc := 0; pc < n; pc++ {
		if second[pc] {
			continue
		}
		ins := p.Insns[pc]
		if !ins.Op.Class().IsJump() {
			continue
		}
		switch op := ins.Op.JumpOp(); {
		case op == asm.JumpExit:
			continue
		case op == asm.JumpCall:
			if ins.Op != asm.OpCall || ins.Src != asm.PseudoCall {
				continue // helper calls and the rest: the verifier's business
			}
			t := pc + 1 + int(ins.Imm)
			if t < 0 || t >= n || !funcStart[t] {
				return structErr(pc, codeBadJumpTarget, "call target %d is not the start of a function", t)
			}
			continue
		}
		off := int(ins.Off)
		if ins.Op == asm.OpJa32 {
			off = int(ins.Imm)
		}
		t := pc + 1 + off
		if t < 0 || t >= n {
			return structErr(pc, codeJumpOutOfRange, "jump target %d out of range [0, %d)", t, n)
		}
		// clang never jumps between functions; calls do that.
		if f := p.FuncAt(pc); t < f.Start || t >= f.End {
			return structErr(pc, codeBadJumpTarget, "jump target %d is outside function %q [%d, %d)", t, f.Name, f.Start, f.End)
		}
		if second[t] {
			return structErr(pc, codeJumpIntoLdImm64, "jump target %d is the second slot of an LD_IMM64", t)
		}
	}
	return nil
}

// StructureError is a structural fault of a program that the loader finds
// before any verification: an incomplete LD_IMM64, a jump or call to no
// instruction, a reference to no map. Code is the stable code the verifier
// gives the same fault ("E003 jump-out-of-range", see verifier/codes.go;
// StructureCodes lists those used here), so tools match one set of codes.
type StructureError struct {
	// PC is the instruction slot at fault, -1 when none is.
	PC int
	// Code is the verifier's code and name ("E004 jump-into-ldimm64").
	Code string
	// Msg says what is wrong.
	Msg string
}

// Error returns "pc 7: E003 jump-out-of-range: msg".
func (e *StructureError) Error() string {
	if e.PC < 0 {
		return e.Code + ": " + e.Msg
	}
	return fmt.Sprintf("pc %d: %s: %s", e.PC, e.Code, e.Msg)
}

// The verifier's codes (verifier/codes.go) for the faults the loader finds.
const (
	codeInvalidOpcode   = "E001 invalid-opcode"
	codeJumpOutOfRange  = "E003 jump-out-of-range"
	codeJumpIntoLdImm64 = "E004 jump-into-ldimm64"
	codeMissingExit     = "E005 missing-exit"
	codeBadMapRef       = "E031 bad-map-ref"
	codeBadJumpTarget   = "E032 bad-jump-target"
)

// StructureCodes are the codes a StructureError may carry.
var StructureCodes = []string{codeInvalidOpcode, codeJumpOutOfRange, codeJumpIntoLdImm64, codeMissingExit, codeBadMapRef, codeBadJumpTarget}

func structErr(pc int, code, format string, args ...any) *StructureError {
	return &StructureError{PC: pc, Code: code, Msg: fmt.Sprintf(format, args...)}
}

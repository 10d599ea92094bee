package loader

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/structure"
)

// validate checks the invariants every later stage relies on without
// re-checking: the slices line up, the function table covers the
// instructions, the instructions pass package structure (the one
// validation every engine trusts: known opcodes, complete LD_IMM64s with
// valid map references, jumps and calls that land on instructions, no
// fall-through between functions), and what the ELF adds: every
// BPF-to-BPF call lands on the first slot of a function symbol, every jump
// stays inside its function symbol and every map-value reference inside
// the global data.
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
	// Calls first: a call into the middle of a function symbol is named as
	// such, not as the fall-through the structure would then find.
	for pc := 0; pc < n; pc++ {
		switch ins := p.Insns[pc]; {
		case ins.IsLdImm64():
			pc++
		case ins.Op == asm.OpCall && ins.Src == asm.PseudoCall:
			if t := pc + 1 + int(ins.Imm); t >= 0 && t < n && !funcStart[t] {
				return structErr(pc, codeBadJumpTarget, "call target %d is not the start of a function", t)
			}
		}
	}
	sp, serr := structure.Validate(p.Insns, structure.Options{Maps: len(maps), Callx: true})
	if serr != nil {
		msg := serr.Msg
		if f := p.FuncAt(serr.PC); f != nil {
			msg += fmt.Sprintf(" (in function %q)", f.Name)
		}
		return structErr(serr.PC, structureCodes[serr.Code], "%s", msg)
	}
	for pc := 0; pc < n; pc++ {
		switch sp.Kind(pc) {
		case structure.LdImm64:
			if ins := p.Insns[pc]; ins.Src == asm.PseudoMapValue {
				m := maps[ins.Imm]
				if off := uint32(p.Insns[pc+1].Imm); !m.IsGlobalData() || off >= m.ValueSize {
					return structErr(pc, codeBadMapRef, "value offset %d outside map %q", off, m.Name)
				}
			}
		case structure.Goto, structure.Branch:
			// clang never jumps between functions; calls do that.
			if t, f := sp.Target(pc), p.FuncAt(pc); t < f.Start || t >= f.End {
				return structErr(pc, codeBadJumpTarget, "jump target %d is outside function %q [%d, %d)", t, f.Name, f.Start, f.End)
			}
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
	codeInvalidRegister = "E002 invalid-register"
	codeJumpOutOfRange  = "E003 jump-out-of-range"
	codeJumpIntoLdImm64 = "E004 jump-into-ldimm64"
	codeMissingExit     = "E005 missing-exit"
	codeBadMapRef       = "E031 bad-map-ref"
	codeBadJumpTarget   = "E032 bad-jump-target"
)

// StructureCodes are the codes a StructureError may carry.
var StructureCodes = []string{codeInvalidOpcode, codeInvalidRegister, codeJumpOutOfRange, codeJumpIntoLdImm64, codeMissingExit, codeBadMapRef, codeBadJumpTarget}

// structureCodes names the codes structure.Validate returns.
var structureCodes = map[structure.Code]string{
	structure.InvalidOpcode:   codeInvalidOpcode,
	structure.InvalidRegister: codeInvalidRegister,
	structure.JumpOutOfRange:  codeJumpOutOfRange,
	structure.JumpIntoLdImm64: codeJumpIntoLdImm64,
	structure.MissingExit:     codeMissingExit,
	structure.BadMapRef:       codeBadMapRef,
	structure.BadJumpTarget:   codeBadJumpTarget,
}

func structErr(pc int, code, format string, args ...any) *StructureError {
	return &StructureError{PC: pc, Code: code, Msg: fmt.Sprintf(format, args...)}
}

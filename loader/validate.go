package loader

import (
	"errors"
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
)

// validate checks the invariants every later stage relies on without
// re-checking: the slices line up, every LD_IMM64 is complete and its
// pseudo references are valid, every jump lands on an instruction of its
// own function, and every BPF-to-BPF call lands on the first slot of a
// function.
// It does not judge the program's safety: that is the verifier's job.
func (p *Program) validate(maps []*MapSpec) error {
	n := len(p.Insns)
	if n == 0 {
		return errors.New("no instructions")
	}
	if len(p.Lines) != n {
		return fmt.Errorf("%d line entries for %d instructions", len(p.Lines), n)
	}
	if len(p.Funcs) == 0 || p.Funcs[0].Start != 0 || p.Funcs[0].Name != p.Name || p.Funcs[len(p.Funcs)-1].End != n {
		return errors.New("function table does not cover the instructions")
	}
	funcStart := make(map[int]bool, len(p.Funcs))
	for i, f := range p.Funcs {
		if f.Start >= f.End || (i > 0 && f.Start != p.Funcs[i-1].End) {
			return fmt.Errorf("function %q: bad extent [%d, %d)", f.Name, f.Start, f.End)
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
			return fmt.Errorf("pc %d: LD_IMM64 without its second slot", pc)
		}
		if lo := p.Insns[pc+1]; lo.Op != 0 || lo.Dst != 0 || lo.Src != 0 || lo.Off != 0 {
			return fmt.Errorf("pc %d: second slot of LD_IMM64 has non-zero fields", pc+1)
		}
		switch ins.Src {
		case 0:
		case asm.PseudoMapFD, asm.PseudoMapValue:
			if ins.Imm < 0 || int(ins.Imm) >= len(maps) {
				return fmt.Errorf("pc %d: map index %d out of range (%d maps)", pc, ins.Imm, len(maps))
			}
			if ins.Src == asm.PseudoMapValue {
				m := maps[ins.Imm]
				if off := uint32(p.Insns[pc+1].Imm); !m.IsGlobalData() || off >= m.ValueSize {
					return fmt.Errorf("pc %d: value offset %d outside map %q", pc, off, m.Name)
				}
			}
		default:
			return fmt.Errorf("pc %d: LD_IMM64 with unknown pseudo source %d", pc, ins.Src)
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
				return fmt.Errorf("pc %d: call target %d is not the start of a function", pc, t)
			}
			continue
		}
		off := int(ins.Off)
		if ins.Op == asm.OpJa32 {
			off = int(ins.Imm)
		}
		t := pc + 1 + off
		if t < 0 || t >= n {
			return fmt.Errorf("pc %d: jump target %d out of range [0, %d)", pc, t, n)
		}
		// clang never jumps between functions; calls do that.
		if f := p.FuncAt(pc); t < f.Start || t >= f.End {
			return fmt.Errorf("pc %d: jump target %d is outside function %q [%d, %d)", pc, t, f.Name, f.Start, f.End)
		}
		if second[t] {
			return fmt.Errorf("pc %d: jump target %d is the second slot of an LD_IMM64", pc, t)
		}
	}
	return nil
}

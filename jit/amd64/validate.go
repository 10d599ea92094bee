package amd64

import (
	"errors"

	"github.com/ncclbpf/ncclbpf/asm"
)

// checkFields rejects what the reference interpreter rejects (RFC 9669's
// reserved fields, writes to r10, registers above r10), so that both
// engines accept the same programs. Structural checks (jump targets,
// functions) are in analyze.
func checkFields(ins asm.Instruction) error {
	if ins.Dst > asm.R10 || ins.Src > asm.R10 {
		return errors.New("register out of range")
	}
	x := ins.Op.Source() == asm.SourceX
	switch c := ins.Op.Class(); c {
	case asm.ClassALU, asm.ClassALU64:
		if ins.Dst == asm.R10 {
			return errors.New("write to the read-only frame pointer r10")
		}
		switch ins.Op.ALUOp() {
		case asm.ALUNeg:
			if x || ins.Src != 0 || ins.Off != 0 || ins.Imm != 0 {
				return errors.New("neg with reserved fields set")
			}
			return nil
		case asm.ALUEnd:
			if ins.Src != 0 || ins.Off != 0 {
				return errors.New("byte swap with reserved fields set")
			}
			return nil
		}
		if x && ins.Imm != 0 || !x && ins.Src != 0 {
			return errors.New("ALU operation with reserved fields set")
		}
	case asm.ClassJMP, asm.ClassJMP32:
		switch ins.Op.JumpOp() {
		case asm.JumpA:
			if x || ins.Src != 0 || ins.Dst != 0 || c == asm.ClassJMP && ins.Imm != 0 || c == asm.ClassJMP32 && ins.Off != 0 {
				return errors.New("ja with reserved fields set")
			}
		case asm.JumpExit:
			if x || ins.Src != 0 || ins.Dst != 0 || ins.Off != 0 || ins.Imm != 0 {
				return errors.New("exit with reserved fields set")
			}
		case asm.JumpCall:
			switch {
			case ins.Off != 0:
				return errors.New("call with an offset")
			case x && (ins.Src != 0 || ins.Imm != 0):
				return errors.New("callx takes its register in dst; src and imm must be 0")
			case !x && ins.Dst != 0:
				return errors.New("call with a dst register")
			}
		default:
			if x && ins.Imm != 0 || !x && ins.Src != 0 {
				return errors.New("jump with reserved fields set")
			}
		}
	case asm.ClassLDX:
		if ins.Dst == asm.R10 {
			return errors.New("load into the read-only frame pointer r10")
		}
		if ins.Imm != 0 {
			return errors.New("load with an immediate")
		}
	case asm.ClassST:
		if ins.Src != 0 {
			return errors.New("store-immediate with a src register")
		}
	case asm.ClassSTX:
		if ins.Op.Mode() == asm.ModeMEM && ins.Imm != 0 {
			return errors.New("store with an immediate")
		}
		if ins.Op.Mode() == asm.ModeAtomic && ins.Imm&asm.AtomicFetch != 0 && ins.Imm != asm.AtomicCmpXchg && ins.Src == asm.R10 {
			return errors.New("atomic fetch into the read-only frame pointer r10")
		}
	case asm.ClassLD:
		if ins.Dst == asm.R10 {
			return errors.New("lddw into the read-only frame pointer r10")
		}
		if ins.Off != 0 {
			return errors.New("lddw with an offset")
		}
	}
	return nil
}

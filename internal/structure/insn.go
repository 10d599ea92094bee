package structure

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
)

// checkInsn checks the fields of the instruction at pc (both slots of an
// LD_IMM64) and records its kind.
func (p *Program) checkInsn(pc int, o Options) *Error {
	ins := p.Insns[pc]
	if ins.Dst > asm.R10 || ins.Src > asm.R10 {
		return errorf(InvalidRegister, pc, "register out of range: r%d is not one of r0-r10", max(ins.Dst, ins.Src))
	}
	var (
		k    = Plain
		code Code
		why  string
	)
	switch c := ins.Op.Class(); c {
	case asm.ClassLD:
		k = LdImm64
		code, why = checkLdImm64(p.Insns, pc, o.Maps)
	case asm.ClassLDX:
		code, why = checkLoad(ins)
	case asm.ClassST, asm.ClassSTX:
		code, why = checkStore(ins, c)
	case asm.ClassALU, asm.ClassALU64:
		code, why = checkALU(ins, c)
	case asm.ClassJMP, asm.ClassJMP32:
		k, code, why = checkJump(ins, c, o.Callx)
		if k == Callx {
			p.callx = true
		}
	}
	if code != 0 {
		at := pc
		if code == secondSlot {
			code, at = InvalidOpcode, pc+1
		}
		return errorf(code, at, "%s", why)
	}
	p.slots[pc].kind = k
	return nil
}

// secondSlot marks a fault of an LD_IMM64's second slot (reported there).
const secondSlot Code = -1

func bad(format string, args ...any) (Code, string) {
	return InvalidOpcode, fmt.Sprintf(format, args...)
}

func checkLdImm64(insns []asm.Instruction, pc, maps int) (Code, string) {
	ins := insns[pc]
	if ins.Op != asm.OpLdImm64 {
		return bad("unsupported load opcode %#02x (legacy packet loads LD_ABS/LD_IND and other LD forms are not supported)", uint8(ins.Op))
	}
	if ins.Off != 0 {
		return bad("LD_IMM64 with nonzero offset %d", ins.Off)
	}
	if ins.Src > asm.PseudoMapValue {
		return bad("LD_IMM64 with unsupported src %d", ins.Src)
	}
	if ins.Dst == asm.R10 {
		return InvalidRegister, "LD_IMM64 into the read-only frame pointer r10"
	}
	if pc+1 >= len(insns) {
		return bad("LD_IMM64 is truncated: its second slot is missing")
	}
	next := insns[pc+1]
	if next.Op != 0 || next.Dst != 0 || next.Src != 0 || next.Off != 0 {
		return secondSlot, "second slot of LD_IMM64 has nonzero opcode or fields (only an immediate)"
	}
	if ins.Src == asm.PseudoMapFD || ins.Src == asm.PseudoMapValue {
		if ins.Imm < 0 || int(ins.Imm) >= maps {
			return BadMapRef, fmt.Sprintf("LD_IMM64 refers to map %d, the program has %d maps", ins.Imm, maps)
		}
		if ins.Src == asm.PseudoMapFD && next.Imm != 0 {
			return bad("LD_IMM64 map-fd with nonzero second imm %d", next.Imm)
		}
	}
	return 0, ""
}

func checkLoad(ins asm.Instruction) (Code, string) {
	switch ins.Op.Mode() {
	case asm.ModeMEM:
	case asm.ModeMEMSX:
		if ins.Op.Size() == asm.SizeDW {
			return bad("sign-extending load of a double word")
		}
	default:
		return bad("unsupported load mode %#x", uint8(ins.Op.Mode()))
	}
	if ins.Imm != 0 {
		return bad("load with nonzero imm %d", ins.Imm)
	}
	if ins.Dst == asm.R10 {
		return InvalidRegister, "load into the read-only frame pointer r10"
	}
	return 0, ""
}

func checkStore(ins asm.Instruction, c asm.Class) (Code, string) {
	switch ins.Op.Mode() {
	case asm.ModeMEM:
		if c == asm.ClassST && ins.Src != 0 {
			return bad("store-immediate with nonzero src register %d", ins.Src)
		}
		if c == asm.ClassSTX && ins.Imm != 0 {
			return bad("store with nonzero imm %d", ins.Imm)
		}
		return 0, ""
	case asm.ModeAtomic:
		if c != asm.ClassSTX {
			return bad("atomic operation in class st")
		}
		if s := ins.Op.Size(); s != asm.SizeW && s != asm.SizeDW {
			return bad("atomic operation of %d bytes (only 4 and 8)", s.Bytes())
		}
		switch ins.Imm {
		case asm.AtomicAdd, asm.AtomicOr, asm.AtomicAnd, asm.AtomicXor, asm.AtomicCmpXchg:
		case asm.AtomicAdd | asm.AtomicFetch, asm.AtomicOr | asm.AtomicFetch,
			asm.AtomicAnd | asm.AtomicFetch, asm.AtomicXor | asm.AtomicFetch, asm.AtomicXchg:
			if ins.Src == asm.R10 {
				return InvalidRegister, "atomic fetch into the read-only frame pointer r10"
			}
		default:
			return bad("unknown atomic operation %#x", ins.Imm)
		}
		return 0, ""
	}
	return bad("unsupported store mode %#x", uint8(ins.Op.Mode()))
}

func checkALU(ins asm.Instruction, c asm.Class) (Code, string) {
	x := ins.Op.Source() == asm.SourceX
	op := ins.Op.ALUOp()
	if ins.Dst == asm.R10 {
		return InvalidRegister, fmt.Sprintf("%v writes the read-only frame pointer r10", alu32or64(c))
	}
	switch op {
	case asm.ALUAdd, asm.ALUSub, asm.ALUMul, asm.ALUOr, asm.ALUAnd, asm.ALULsh,
		asm.ALURsh, asm.ALUXor, asm.ALUArsh:
		if ins.Off != 0 {
			return bad("ALU operation %#x with nonzero offset %d", uint8(op), ins.Off)
		}
	case asm.ALUDiv, asm.ALUMod:
		if ins.Off != 0 && ins.Off != 1 {
			return bad("division/modulo offset must be 0 (unsigned) or 1 (signed), not %d", ins.Off)
		}
	case asm.ALUNeg:
		if x || ins.Src != 0 || ins.Off != 0 || ins.Imm != 0 {
			return bad("neg uses reserved fields (source, src, offset and imm must be 0)")
		}
		return 0, ""
	case asm.ALUMov:
		switch {
		case ins.Off == 0:
		case x && (ins.Off == 8 || ins.Off == 16):
		case x && ins.Off == 32 && c == asm.ClassALU64:
		default:
			return bad("mov with invalid sign-extension offset %d for %v", ins.Off, alu32or64(c))
		}
	case asm.ALUEnd:
		if ins.Src != 0 || ins.Off != 0 {
			return bad("byte swap uses reserved fields (src, offset)")
		}
		if c == asm.ClassALU64 && x {
			return bad("bswap (ALU64 END) must use source K")
		}
		if ins.Imm != 16 && ins.Imm != 32 && ins.Imm != 64 {
			return bad("byte swap width %d is not 16, 32 or 64", ins.Imm)
		}
		return 0, ""
	default:
		return bad("unknown ALU operation %#x", uint8(op))
	}
	if x && ins.Imm != 0 {
		return bad("register-source ALU operation with nonzero imm %d", ins.Imm)
	}
	if !x && ins.Src != 0 {
		return bad("immediate-source ALU operation with nonzero src register %d", ins.Src)
	}
	return 0, ""
}

func alu32or64(c asm.Class) string {
	if c == asm.ClassALU {
		return "alu32"
	}
	return "alu64"
}

func checkJump(ins asm.Instruction, c asm.Class, callx bool) (Kind, Code, string) {
	x := ins.Op.Source() == asm.SourceX
	fail := func(format string, args ...any) (Kind, Code, string) {
		code, why := bad(format, args...)
		return Plain, code, why
	}
	switch op := ins.Op.JumpOp(); op {
	case asm.JumpA:
		if x || ins.Src != 0 || ins.Dst != 0 {
			return fail("ja uses reserved fields (source, src and dst must be 0)")
		}
		if c == asm.ClassJMP && ins.Imm != 0 {
			return fail("ja with nonzero imm %d (gotol is JMP32|JA)", ins.Imm)
		}
		if c == asm.ClassJMP32 && ins.Off != 0 {
			return fail("gotol with nonzero offset %d", ins.Off)
		}
		return Goto, 0, ""
	case asm.JumpExit:
		if c != asm.ClassJMP || x || ins.Src != 0 || ins.Dst != 0 || ins.Off != 0 || ins.Imm != 0 {
			return fail("exit uses reserved fields or class jmp32")
		}
		return Exit, 0, ""
	case asm.JumpCall:
		if c != asm.ClassJMP {
			return fail("call in class jmp32")
		}
		if ins.Off != 0 {
			return fail("call with nonzero offset %d", ins.Off)
		}
		if x {
			if !callx {
				return fail("indirect calls (callx) are not supported")
			}
			if ins.Src != 0 || ins.Imm != 0 {
				return fail("callx takes its register in dst; src and imm must be 0")
			}
			return Callx, 0, ""
		}
		if ins.Dst != 0 {
			return fail("call with nonzero dst register")
		}
		switch ins.Src {
		case asm.PseudoHelper:
			return HelperCall, 0, ""
		case asm.PseudoCall:
			return LocalCall, 0, ""
		}
		return fail("call with unsupported src %d (only helper ids and local calls)", ins.Src)
	case asm.JumpEq, asm.JumpGT, asm.JumpGE, asm.JumpSet, asm.JumpNE, asm.JumpSGT,
		asm.JumpSGE, asm.JumpLT, asm.JumpLE, asm.JumpSLT, asm.JumpSLE:
		if x && ins.Imm != 0 {
			return fail("register-source jump with nonzero imm %d", ins.Imm)
		}
		if !x && ins.Src != 0 {
			return fail("immediate-source jump with nonzero src register %d", ins.Src)
		}
		return Branch, 0, ""
	default:
		return fail("unknown jump operation %#x", uint8(op))
	}
}

package vm

import "github.com/ncclbpf/ncclbpf/asm"

// Fast paths. The run loop first switches on insn.fop, a dense number that
// Compile gives the most frequent simple instructions, so that they run
// without a call; every other instruction (fop == fGeneric) goes through
// the general per-class code, which defines the semantics. Each fast case
// must compute exactly what the general code computes: the differential
// and conformance tests run both.
const (
	fGeneric uint8 = iota
	fAdd64K
	fAdd64X
	fSub64K
	fSub64X
	fMul64K
	fMul64X
	fAnd64K
	fAnd64X
	fOr64K
	fOr64X
	fXor64K
	fXor64X
	fLsh64K
	fLsh64X
	fRsh64K
	fRsh64X
	fArsh64K
	fArsh64X
	fMov64K
	fMov64X
	fAdd32K
	fAdd32X
	fMov32K
	fMov32X
	fJa
	fJeqK
	fJeqX
	fJneK
	fJneX
	fJgtK
	fJgtX
	fJgeK
	fJgeX
	fJltK
	fJltX
	fJleK
	fJleX
	fJsgtK
	fJsgtX
	fJsgeK
	fJsgeX
	fJsltK
	fJsltX
	fJsleK
	fJsleX
	fLdImm64
)

func alu(c asm.Class, op asm.ALUOp, s asm.Source) asm.OpCode { return asm.ALUOpCode(c, op, s) }

func jmp(op asm.JumpOp, s asm.Source) asm.OpCode { return asm.JumpOpCode(asm.ClassJMP, op, s) }

// fastOps maps opcodes to their fast path (absent: fGeneric).
var fastOps = func() map[asm.OpCode]uint8 {
	m := map[asm.OpCode]uint8{asm.OpJa: fJa, asm.OpLdImm64: fLdImm64}
	a64 := []struct {
		op   asm.ALUOp
		k, x uint8
	}{
		{asm.ALUAdd, fAdd64K, fAdd64X}, {asm.ALUSub, fSub64K, fSub64X}, {asm.ALUMul, fMul64K, fMul64X},
		{asm.ALUAnd, fAnd64K, fAnd64X}, {asm.ALUOr, fOr64K, fOr64X}, {asm.ALUXor, fXor64K, fXor64X},
		{asm.ALULsh, fLsh64K, fLsh64X}, {asm.ALURsh, fRsh64K, fRsh64X}, {asm.ALUArsh, fArsh64K, fArsh64X},
		{asm.ALUMov, fMov64K, fMov64X},
	}
	for _, e := range a64 {
		m[alu(asm.ClassALU64, e.op, asm.SourceK)] = e.k
		m[alu(asm.ClassALU64, e.op, asm.SourceX)] = e.x
	}
	m[alu(asm.ClassALU, asm.ALUAdd, asm.SourceK)] = fAdd32K
	m[alu(asm.ClassALU, asm.ALUAdd, asm.SourceX)] = fAdd32X
	m[alu(asm.ClassALU, asm.ALUMov, asm.SourceK)] = fMov32K
	m[alu(asm.ClassALU, asm.ALUMov, asm.SourceX)] = fMov32X
	js := []struct {
		op   asm.JumpOp
		k, x uint8
	}{
		{asm.JumpEq, fJeqK, fJeqX}, {asm.JumpNE, fJneK, fJneX}, {asm.JumpGT, fJgtK, fJgtX}, {asm.JumpGE, fJgeK, fJgeX},
		{asm.JumpLT, fJltK, fJltX}, {asm.JumpLE, fJleK, fJleX}, {asm.JumpSGT, fJsgtK, fJsgtX}, {asm.JumpSGE, fJsgeK, fJsgeX},
		{asm.JumpSLT, fJsltK, fJsltX}, {asm.JumpSLE, fJsleK, fJsleX},
	}
	for _, e := range js {
		m[jmp(e.op, asm.SourceK)] = e.k
		m[jmp(e.op, asm.SourceX)] = e.x
	}
	return m
}()

// fastOp returns the fast path of a validated instruction: sign-extending
// moves (mov with an offset) take the general path.
func fastOp(in asm.Instruction) uint8 {
	if in.Op.Class().IsALU() && in.Op.ALUOp() == asm.ALUMov && in.Off != 0 {
		return fGeneric
	}
	return fastOps[in.Op]
}

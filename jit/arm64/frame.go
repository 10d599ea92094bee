package arm64

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/vm"
)

// zeroOrder lists the registers the interpreter starts at 0.
var zeroOrder = [...]asm.Register{asm.R0, asm.R3, asm.R4, asm.R5, asm.R6, asm.R7, asm.R8, asm.R9}

// mainPrologue: frame record (x29, x30), x19-x24 saved, 512-byte eBPF
// stack, r10 (x23) at its top, the anchor (x24) = sp, and the registers the
// interpreter starts at zero cleared. sp stays 16-byte aligned throughout.
func (c *compiler) mainPrologue() {
	c.emit(
		encSTPpre(x29, x30, sp, -16),
		encRRI12(opADDi, true, x29, sp, 0),
		encSTPpre(x19, x20, sp, -16),
		encSTPpre(x21, x22, sp, -16),
		encSTPpre(x23, x24, sp, -16),
		encRRI12(opSUBi, true, sp, sp, asm.StackSize),
		encRRI12(opADDi, true, frameReg, sp, 0),
		encRRI12(opADDi, true, regMap[asm.R10], sp, asm.StackSize),
	)
	for _, r := range zeroOrder {
		c.emit(encRRR(opORR, true, regMap[r], xzr, xzr))
	}
}

// mainReturn frees the outermost frame (sp must point at it), restores
// the saved registers and returns x0 = r0 (x0 already set), x1 = fault.
func (c *compiler) mainReturn() {
	c.emit(
		encRRI12(opADDi, true, sp, sp, asm.StackSize),
		encLDPpost(x23, x24, sp, 16),
		encLDPpost(x21, x22, sp, 16),
		encLDPpost(x19, x20, sp, 16),
		encLDPpost(x29, x30, sp, 16),
		insRET,
	)
}

// subPrologue saves the frame record, r6-r9 and the caller's r10,
// allocates a 512-byte eBPF stack and points r10 at its top.
func (c *compiler) subPrologue() {
	c.emit(
		encSTPpre(x29, x30, sp, -16),
		encRRI12(opADDi, true, x29, sp, 0),
		encSTPpre(x19, x20, sp, -16),
		encSTPpre(x21, x22, sp, -16),
		encSTPpre(x23, xzr, sp, -16),
		encRRI12(opSUBi, true, sp, sp, asm.StackSize),
		encRRI12(opADDi, true, regMap[asm.R10], sp, asm.StackSize),
	)
}

func (c *compiler) subEpilogue() {
	c.emit(
		encRRI12(opADDi, true, sp, sp, asm.StackSize),
		encLDPpost(x23, xzr, sp, 16),
		encLDPpost(x21, x22, sp, 16),
		encLDPpost(x19, x20, sp, 16),
		encLDPpost(x29, x30, sp, 16),
		insRET,
	)
}

// exit returns from the current function.
func (c *compiler) exit(outermost bool) {
	if !outermost {
		c.subEpilogue()
		return
	}
	c.mov64(x0, regMap[asm.R0])
	c.emit(encRRR(opORR, true, x1, xzr, xzr))
	c.mainReturn()
}

// call emits a helper call, a BPF-to-BPF call or callx.
func (c *compiler) call(pc int, ins asm.Instruction) error {
	switch {
	case ins.Op == asm.OpCallX:
		c.callx(pc, regMap[ins.Dst])
		return nil
	case ins.Op != asm.OpCall:
		return errAt(pc, ins, "malformed call")
	case ins.Src == asm.PseudoCall:
		c.localCall(pc, pc+1+int(ins.Imm))
		return nil
	case ins.Src == asm.PseudoHelper:
		h, ok := c.prog.Helpers[helpers.ID(ins.Imm)]
		if !ok {
			return errAt(pc, ins, "call to unknown helper %d", ins.Imm)
		}
		if h.Addr == 0 {
			return errAt(pc, ins, "helper %d has no address", ins.Imm)
		}
		c.helperCall(h)
		return nil
	}
	return errAt(pc, ins, "call with source %d", ins.Src)
}

// helperCall calls a native helper: r1-r5 already are x0-x4 (AAPCS64's
// first argument registers); the result comes back in x0 and moves to r0.
func (c *compiler) helperCall(h vm.Helper) {
	c.callAbs(h.Addr)
	c.mov64(regMap[asm.R0], x0)
	if h.UnwindOnZero {
		c.cbz(false, x0, labUnwind)
	}
}

// callAbs calls an absolute address: BL when within ±128 MiB of the
// code, else through x16.
func (c *compiler) callAbs(addr uintptr) {
	from := int64(c.base) + int64(c.len())
	if d := int64(addr) - from; d >= -(1<<27) && d < 1<<27 {
		c.emit(encBL(int32(d)))
		return
	}
	c.loadImm(true, ipReg, uint64(addr))
	c.emit(encBLR(ipReg))
}

// localCall emits a BPF-to-BPF call to the function starting at target.
func (c *compiler) localCall(pc, target int) {
	if c.depthCheck {
		// In the frame at depth d (outermost = 1), sp = anchor - (d-1)*subFrameSize;
		// a call is allowed while d < MaxCallDepth.
		c.loadImm(true, tmp1, uint64((MaxCallDepth-2)*subFrameSize))
		c.emit(
			encRRR(opSUB, true, tmp1, frameReg, tmp1),
			encRRI12(opADDi, true, tmp2, sp, 0),
			encRRR(opSUBS, true, xzr, tmp2, tmp1),
		)
		c.fault(condLO, FaultCallDepth, pc)
	}
	c.fixups = append(c.fixups, fixup{at: c.len(), target: int32(target), tk: toFunc, bk: brImm26})
	c.emit(encBL(0))
}

// callx calls the helper whose id is in r through the program's helper
// table; an id without a helper faults (FaultCallx).
func (c *compiler) callx(pc int, r reg) {
	if c.tableLen == 0 {
		c.fault(condAL, FaultCallx, pc)
		return
	}
	c.loadImm(true, tmp1, uint64(c.tableLen))
	c.emit(encRRR(opSUBS, true, xzr, r, tmp1))
	c.fault(condHS, FaultCallx, pc)
	c.loadAbs64Label(tabReg, labTable)
	c.emit(
		encLdStReg(3, ldstLoad, ipReg, tabReg, r, true),
		encRRR(opSUBS, true, xzr, ipReg, xzr),
	)
	c.fault(condEQ, FaultCallx, pc)
	c.emit(encBLR(ipReg))
	c.mov64(regMap[asm.R0], x0)
}

// fault branches (on cc) to an out-of-line stub that returns the fault word.
func (c *compiler) fault(cc cond, kind FaultKind, pc int) {
	c.branch(cc, toLabel, labFirstFault+int32(len(c.faults)))
	c.faults = append(c.faults, uint32(kind)|uint32(pc)<<8)
}

// emitCold emits, after the program: the common return path (sp from the
// anchor, so it works at any call depth), the unwind stub, one stub per
// fault site, the thunks of unwinding helpers reached by callx, and the
// callx table. It returns the offsets of the labels.
func (c *compiler) emitCold() []int32 {
	labels := make([]int32, labFirstFault+len(c.faults))
	labels[labRet] = c.len()
	c.emit(encRRI12(opADDi, true, sp, frameReg, 0))
	c.mainReturn()
	labels[labUnwind] = c.len()
	c.emit(encRRR(opORR, true, x0, xzr, xzr), encRRR(opORR, true, x1, xzr, xzr))
	c.branchBack(condAL, labels[labRet])
	for i, w := range c.faults {
		labels[labFirstFault+i] = c.len()
		c.emit(encRRR(opORR, true, x0, xzr, xzr))
		c.loadImm(true, x1, uint64(w))
		c.branchBack(condAL, labels[labRet])
	}
	if c.tableLen == 0 {
		return labels
	}
	entries := make([]uint64, c.tableLen)
	for _, id := range c.helperIDs {
		h := c.prog.Helpers[helpers.ID(id)]
		if !h.UnwindOnZero {
			entries[id] = uint64(h.Addr)
			continue
		}
		// Thunk: keep the return address, call, unwind on zero.
		entries[id] = uint64(c.base) + uint64(c.len())
		c.emit(encSTPpre(x29, x30, sp, -16), encRRI12(opADDi, true, x29, sp, 0))
		c.callAbs(h.Addr)
		c.emit(encLDPpost(x29, x30, sp, 16))
		c.emit(encCBNZ(true, x0, 8))
		c.branchBack(condAL, labels[labUnwind])
		c.emit(insRET)
	}
	for c.len()%8 != 0 {
		c.emit(insBRK)
	}
	labels[labTable] = c.len()
	for _, e := range entries {
		c.emit(uint32(e), uint32(e>>32))
	}
	return labels
}

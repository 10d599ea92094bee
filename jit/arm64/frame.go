package arm64

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/vm"
)

// mainFrame describes the prologue and epilogue of the outermost function.
//
// Programs with BPF-to-BPF calls get the full frame: the frame record
// (x29, x30), x19-x24, the 512-byte eBPF stack, the anchor x24 = sp, and
// r0, r3-r9 zeroed; the unwind and fault paths leave from any depth and skip
// the epilogues in between, so the outermost frame restores everything.
//
// A program of one function saves only what it uses: the frame record when
// it calls anything, x19-x22 for the r6-r9 it names, x23 and the eBPF stack
// when it names r10, x24 when it uses callx (whose unwinding thunks leave
// from below the frame); registers are stored in pairs (XZR pads an odd
// count) so sp stays 16-byte aligned. It zeroes only the registers some
// path may read before writing them (analysis.Info.MayReadUninit).
type mainFrame struct {
	pairs  [][2]reg // stored in this order with STP pre-index, loaded in reverse
	stack  bool     // 512-byte eBPF stack, r10 (x23) at its top
	anchor bool     // x24 = sp after the prologue
	zero   []reg
}

// planFrame decides the outermost frame (after analysis).
func (c *compiler) planFrame() {
	use := c.Frame()
	fr := &c.frame
	if use.Full {
		*fr = mainFrame{pairs: [][2]reg{{x29, x30}, {x19, x20}, {x21, x22}, {x23, x24}}, stack: true, anchor: true}
	} else {
		*fr = mainFrame{stack: use.UsesStack(), anchor: c.HasCallx}
		if use.Calls {
			fr.pairs = append(fr.pairs, [2]reg{x29, x30})
		}
		var regs []reg
		for _, s := range [...]struct {
			x   reg
			use bool
		}{
			{x19, use.Uses(asm.R6)},
			{x20, use.Uses(asm.R7)},
			{x21, use.Uses(asm.R8)},
			{x22, use.Uses(asm.R9)},
			{x23, fr.stack},
			{x24, fr.anchor},
		} {
			if s.use {
				regs = append(regs, s.x)
			}
		}
		for i := 0; i < len(regs); i += 2 {
			p := [2]reg{regs[i], xzr}
			if i+1 < len(regs) {
				p[1] = regs[i+1]
			}
			fr.pairs = append(fr.pairs, p)
		}
	}
	for _, r := range use.Zero {
		fr.zero = append(fr.zero, regMap[r])
	}
}

// MainPrologue saves the registers of the frame plan, allocates the eBPF
// stack, points r10 at its top, sets the anchor and zeroes the registers
// that may be read before written. sp stays 16-byte aligned throughout.
func (c *compiler) MainPrologue() {
	fr := &c.frame
	for _, p := range fr.pairs {
		c.emit(encSTPpre(p[0], p[1], sp, -16))
		if p[0] == x29 {
			c.emit(encRRI12(opADDi, true, x29, sp, 0))
		}
	}
	if fr.stack {
		c.emit(encRRI12(opSUBi, true, sp, sp, asm.StackSize))
	}
	if fr.anchor {
		c.emit(encRRI12(opADDi, true, frameReg, sp, 0))
	}
	if fr.stack {
		c.emit(encRRI12(opADDi, true, regMap[asm.R10], sp, asm.StackSize))
	}
	for _, r := range fr.zero {
		c.emit(encRRR(opORR, true, r, xzr, xzr))
	}
}

// mainReturn frees the outermost frame (sp must point at it), restores
// the saved registers and returns x0 = r0 (x0 already set), x1 = fault.
func (c *compiler) mainReturn() {
	fr := &c.frame
	if fr.stack {
		c.emit(encRRI12(opADDi, true, sp, sp, asm.StackSize))
	}
	for i := len(fr.pairs) - 1; i >= 0; i-- {
		c.emit(encLDPpost(fr.pairs[i][0], fr.pairs[i][1], sp, 16))
	}
	c.emit(insRET)
}

// SubPrologue saves the frame record, r6-r9 and the caller's r10,
// allocates a 512-byte eBPF stack and points r10 at its top.
func (c *compiler) SubPrologue() {
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

// Exit returns from the current function.
func (c *compiler) Exit(outermost bool) {
	if !outermost {
		c.subEpilogue()
		return
	}
	c.mov64(x0, regMap[asm.R0])
	c.emit(encRRR(opORR, true, x1, xzr, xzr))
	c.mainReturn()
}

// HelperCall calls a native helper: r1-r5 already are x0-x4 (AAPCS64's
// first argument registers); the result comes back in x0 and moves to r0.
func (c *compiler) HelperCall(_ int, h vm.Helper) {
	c.callAbs(h.Addr)
	c.mov64(regMap[asm.R0], x0)
	if h.UnwindOnZero {
		c.unwinds = true
		c.cbz(false, x0, labUnwind)
	}
}

// callAbs calls an absolute address: BL when within ±128 MiB of the
// code, else through x16.
func (c *compiler) callAbs(addr uintptr) {
	from := int64(c.base) + int64(c.Len())
	if d := int64(addr) - from; d >= -(1<<27) && d < 1<<27 {
		c.emit(encBL(int32(d)))
		return
	}
	c.loadImm(true, ipReg, uint64(addr))
	c.emit(encBLR(ipReg))
}

// LocalCall emits a BPF-to-BPF call to the function starting at target.
func (c *compiler) LocalCall(pc, target int) {
	if c.DepthCheck {
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
	c.fixups = append(c.fixups, fixup{at: c.Len(), target: int32(target), tk: toFunc, bk: brImm26})
	c.emit(encBL(0))
}

// Callx calls the helper whose id is in r through the program's helper
// table; an id without a helper faults (FaultCallx).
func (c *compiler) Callx(pc int, ebpf asm.Register) {
	r := regMap[ebpf]
	if c.TableLen == 0 {
		c.fault(condAL, FaultCallx, pc)
		return
	}
	c.loadImm(true, tmp1, uint64(c.TableLen))
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
// Callx table. It returns the offsets of the labels.
func (c *compiler) emitCold() []int32 {
	labels := make([]int32, labFirstFault+len(c.faults))
	if !c.unwinds && len(c.faults) == 0 && c.TableLen == 0 {
		return labels // no way out but exit
	}
	labels[labRet] = c.Len()
	// Without the anchor there are no BPF-to-BPF calls or callx thunks:
	// every unwind leaves from the outermost frame's body, where sp already
	// points at the frame.
	if c.frame.anchor {
		c.emit(encRRI12(opADDi, true, sp, frameReg, 0))
	}
	c.mainReturn()
	labels[labUnwind] = c.Len()
	c.emit(encRRR(opORR, true, x0, xzr, xzr), encRRR(opORR, true, x1, xzr, xzr))
	c.branchBack(condAL, labels[labRet])
	for i, w := range c.faults {
		labels[labFirstFault+i] = c.Len()
		c.emit(encRRR(opORR, true, x0, xzr, xzr))
		c.loadImm(true, x1, uint64(w))
		c.branchBack(condAL, labels[labRet])
	}
	if c.TableLen == 0 {
		return labels
	}
	entries := make([]uint64, c.TableLen)
	for _, id := range c.HelperIDs {
		h := c.prog.Helpers[helpers.ID(id)]
		if !h.UnwindOnZero {
			entries[id] = uint64(h.Addr)
			continue
		}
		// Thunk: keep the return address, call, unwind on zero.
		entries[id] = uint64(c.base) + uint64(c.Len())
		c.emit(encSTPpre(x29, x30, sp, -16), encRRI12(opADDi, true, x29, sp, 0))
		c.callAbs(h.Addr)
		c.emit(encLDPpost(x29, x30, sp, 16))
		c.emit(encCBNZ(true, x0, 8))
		c.branchBack(condAL, labels[labUnwind])
		c.emit(insRET)
	}
	for c.Len()%8 != 0 {
		c.emit(insBRK)
	}
	labels[labTable] = c.Len()
	for _, e := range entries {
		c.emit(uint32(e), uint32(e>>32))
	}
	return labels
}

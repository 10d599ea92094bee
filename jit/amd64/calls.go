package amd64

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/execmem"
	"github.com/ncclbpf/ncclbpf/vm"
)

// MainPrologue saves the callee-saved registers the program uses,
// allocates the outermost frame, records it in r12 (when needed), points
// r10 (rbp) at the top of the eBPF stack (when the program names r10) and
// zeroes the registers that may be read before written (see mainFrame).
func (c *compiler) MainPrologue() {
	fr := &c.frame
	for _, r := range fr.saved {
		c.push(r)
	}
	if fr.alloc != 0 {
		c.aluRI(extSub, true, rsp, fr.alloc)
	}
	if fr.anchor {
		c.aluRR(opMovMR, true, frameReg, rsp)
	}
	if fr.stack {
		c.leaRM(rbp, rsp, asm.StackSize)
	}
	for _, r := range fr.zero {
		c.aluRR(opXorMR, false, r, r)
	}
}

// mainEpilogue returns from the outermost frame with fault word 0.
func (c *compiler) mainEpilogue() {
	c.aluRR(opXorMR, false, rdx, rdx)
	c.mainReturn()
}

// mainReturn frees the outermost frame (rsp must point at it), restores
// the saved registers and returns.
func (c *compiler) mainReturn() {
	fr := &c.frame
	if fr.alloc != 0 {
		c.aluRI(extAdd, true, rsp, fr.alloc)
	}
	for i := len(fr.saved) - 1; i >= 0; i-- {
		c.pop(fr.saved[i])
	}
	c.ret()
}

// SubPrologue saves r6-r9 and the caller's r10, allocates a 512-byte eBPF
// stack and points r10 at its top.
func (c *compiler) SubPrologue() {
	for _, r := range [...]reg{rbp, rbx, r13, r14, r15} {
		c.push(r)
	}
	c.aluRI(extSub, true, rsp, subStackAlloc)
	c.leaRM(rbp, rsp, asm.StackSize)
}

func (c *compiler) subEpilogue() {
	c.aluRI(extAdd, true, rsp, subStackAlloc)
	for _, r := range [...]reg{r15, r14, r13, rbx, rbp} {
		c.pop(r)
	}
	c.ret()
}

// Exit returns from the current function.
func (c *compiler) Exit(outermost bool) {
	if outermost {
		c.mainEpilogue()
	} else {
		c.subEpilogue()
	}
}

// HelperCall calls a native helper: r1-r5 already are the System V argument
// registers and the result lands in rax (r0).
func (c *compiler) HelperCall(_ int, h vm.Helper) {
	c.callAbs(h.Addr)
	if h.UnwindOnZero {
		c.aluRR(opTestMR, true, rax, rax)
		c.unwinds = append(c.unwinds, c.jccRel32(ccE))
	}
}

// callAbs emits a call to an absolute address: rel32 when it is in reach
// of the code, else through rax.
func (c *compiler) callAbs(addr uintptr) {
	next := c.base + uintptr(c.Len()) + 5
	if execmem.Rel32Reachable(next, addr) {
		c.byte1(0xe8)
		c.u32(uint32(int32(int64(addr) - int64(next))))
		return
	}
	c.movRI64(rax, uint64(addr))
	c.callR(rax)
}

// LocalCall emits a BPF-to-BPF call to the function starting at target.
func (c *compiler) LocalCall(pc, target int) {
	if c.DepthCheck {
		// In the frame at depth d (outermost = 1), rsp = r12 - (d-1)*subFrameSize;
		// a call is allowed while d < MaxCallDepth.
		c.leaRM(tmp3, frameReg, -int32((MaxCallDepth-2)*subFrameSize))
		c.aluRR(opCmpMR, true, rsp, tmp3)
		c.fault(FaultCallDepth, pc, c.jccRel32(ccB))
	}
	at := c.callRel32()
	c.fixups = append(c.fixups, fixup{at: at, target: int32(target), kind: fixCall})
}

// Callx calls the helper whose id is in r through the program's helper
// table; an id without a helper faults (FaultCallx).
func (c *compiler) Callx(pc int, ebpf asm.Register) {
	r := regMap[ebpf]
	if c.TableLen == 0 {
		c.fault(FaultCallx, pc, c.jmpRel32())
		return
	}
	c.aluRR(opMovMR, true, tmp3, r)
	c.aluRI(extCmp, true, tmp3, c.TableLen)
	c.fault(FaultCallx, pc, c.jccRel32(ccAE))
	c.tableRefs = append(c.tableRefs, c.leaRIP(tmp2))
	c.loadRMIndex8(tmp2, tmp2, tmp3)
	c.aluRR(opTestMR, true, tmp2, tmp2)
	c.fault(FaultCallx, pc, c.jccRel32(ccE))
	c.callR(tmp2)
}

// fault records a jump (rel32 at "at") to an out-of-line fault stub.
func (c *compiler) fault(kind FaultKind, pc int, at int32) {
	c.faults = append(c.faults, faultSite{at: at, word: uint32(kind) | uint32(pc)<<8})
}

// emitCold emits, after the program (nothing when no unwind, fault or callx
// exists): the common return path (restores rsp
// from r12, so it works at any call depth), the unwind stub, one stub per
// fault site, the callx thunks and table.
func (c *compiler) emitCold() {
	if len(c.unwinds) == 0 && len(c.faults) == 0 && c.TableLen == 0 {
		return // no way out but exit
	}
	c.align(16)
	retCommon := c.Len()
	// Without the r12 anchor there are no BPF-to-BPF calls or callx thunks:
	// every unwind leaves from the outermost frame's body, where rsp already
	// points at the frame.
	if c.frame.anchor {
		c.aluRR(opMovMR, true, rsp, frameReg)
	}
	c.mainReturn()
	unwind := c.Len()
	c.aluRR(opXorMR, false, rax, rax)
	c.aluRR(opXorMR, false, rdx, rdx)
	c.jmpBack(0, true, retCommon)
	for _, at := range c.unwinds {
		c.bindRel32(at, unwind)
	}
	for _, f := range c.faults {
		c.bindRel32(f.at, c.Len())
		c.aluRR(opXorMR, false, rax, rax)
		c.movRI32(rdx, f.word)
		c.jmpBack(0, true, retCommon)
	}
	if c.TableLen == 0 {
		return
	}
	// Thunks for helpers that unwind on zero: entered with rsp ≡ 8 (mod 16).
	entries := make([]uint64, c.TableLen)
	for _, id := range c.HelperIDs {
		h := c.prog.Helpers[helpers.ID(id)]
		if h.Addr == 0 {
			continue
		}
		if !h.UnwindOnZero {
			entries[id] = uint64(h.Addr)
			continue
		}
		entries[id] = uint64(c.base) + uint64(c.Len())
		c.aluRI(extSub, true, rsp, 8)
		c.callAbs(h.Addr)
		c.aluRI(extAdd, true, rsp, 8)
		c.aluRR(opTestMR, true, rax, rax)
		c.jmpBack(ccE, false, unwind)
		c.ret()
	}
	c.align(8)
	table := c.Len()
	for _, e := range entries {
		c.u64(e)
	}
	for _, at := range c.tableRefs {
		c.bindRel32(at, table)
	}
}

// align pads with int3 to a multiple of n.
func (c *compiler) align(n int32) {
	for c.Len()%n != 0 {
		c.byte1(0xcc)
	}
}

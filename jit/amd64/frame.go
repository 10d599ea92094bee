package amd64

import "github.com/ncclbpf/ncclbpf/asm"

// mainFrame describes the prologue and epilogue of the outermost function.
//
// Programs with BPF-to-BPF calls get the full frame (every callee-saved
// register, r12 anchored, a 520-byte allocation, r0 and r3-r9 zeroed): the
// unwind and fault paths leave from any depth and skip the epilogues of the
// subprograms in between, so the outermost frame must restore everything.
//
// A program of one function gets only what it needs:
//   - saved: the callee-saved registers its eBPF registers live in (rbx,
//     r13, r14, r15 for r6-r9 when named by an instruction, rbp when r10
//     is), plus r12 when it uses callx (the callx thunks unwind from below
//     the frame, so the common return path restores rsp from r12);
//   - alloc: the 512-byte eBPF stack only when r10 is named, plus 8 bytes
//     when needed to keep rsp 16-byte aligned at helper calls;
//   - zero: only the registers that some path may read before writing them
//     (the interpreter starts r0 and r3-r9 at 0; see
//     analysis.Info.MayReadUninit).
type mainFrame struct {
	saved    []reg // pushed in this order, popped in reverse
	alloc    int32 // bytes subtracted from rsp after the pushes
	anchor   bool  // r12 holds rsp after the prologue
	stack    bool  // r10 (rbp) points at the top of a 512-byte eBPF stack
	zero     []reg // zeroed on entry
	fullSave bool  // the frame of programs with BPF-to-BPF calls
}

// planFrame decides the outermost frame (after analysis).
func (c *compiler) planFrame() {
	use := c.Frame()
	fr := &c.frame
	if use.Full {
		*fr = mainFrame{
			saved:    []reg{rbp, rbx, r12, r13, r14, r15},
			alloc:    mainStackAlloc,
			anchor:   true,
			stack:    true,
			fullSave: true,
		}
	} else {
		*fr = mainFrame{anchor: c.HasCallx, stack: use.UsesStack()}
		for _, s := range [...]struct {
			x   reg
			use bool
		}{
			{rbp, fr.stack},
			{rbx, use.Uses(asm.R6)},
			{r12, fr.anchor},
			{r13, use.Uses(asm.R7)},
			{r14, use.Uses(asm.R8)},
			{r15, use.Uses(asm.R9)},
		} {
			if s.use {
				fr.saved = append(fr.saved, s.x)
			}
		}
		if fr.stack {
			fr.alloc = asm.StackSize
		}
		// On entry rsp ≡ 8 (mod 16) (the return address); helper calls need 0.
		if use.Calls && (8+8*int32(len(fr.saved))+fr.alloc)%16 != 0 {
			fr.alloc += 8
		}
	}
	for _, r := range use.Zero {
		fr.zero = append(fr.zero, regMap[r])
	}
}

package vm

import (
	"fmt"
	"math"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
)

// call executes the CALL instruction in at pc: a helper by id (Src=0), a
// helper whose id is in register Dst (callx), or a BPF-to-BPF call
// (Src=PseudoCall). It returns the next pc, or stop when an UnwindOnZero
// helper returned 0.
func (m *machine) call(x *interpExec, pc int, in *insn) (next int, stop bool, err error) {
	switch {
	case in.op.Source() == asm.SourceX:
		id := m.regs[in.dst]
		h, ok := x.byID[helpers.ID(int32(id))]
		if id > math.MaxInt32 || !ok {
			return 0, false, x.fault(pc, fmt.Sprintf("callx r%d = %#x", in.dst, id), ErrUnknownHelper)
		}
		return pc + 1, m.callHelper(x, &h), nil
	case in.src == uint8(asm.PseudoCall):
		if m.depth+1 >= MaxCallDepth {
			return 0, false, x.fault(pc, fmt.Sprintf("call to pc %d from frame %d", in.aux, m.depth), ErrCallDepth)
		}
		f := &m.frames[m.depth]
		f.ret = pc + 1
		f.saved = [4]uint64{m.regs[6], m.regs[7], m.regs[8], m.regs[9]}
		f.fp = m.regs[10]
		m.depth++
		m.regs[10] = m.enterFrame(m.depth)
		return int(in.aux), false, nil
	default:
		return pc + 1, m.callHelper(x, &x.helpers[in.aux]), nil
	}
}

// callHelper calls the native helper h with r1-r5 and sets r0. It registers
// the memory the helper returns as a region (per its prototype) and reports
// whether the program must stop (UnwindOnZero and a zero result). r1-r5 keep
// their values (programs must not read them after a call; the verifier
// enforces it).
func (m *machine) callHelper(x *interpExec, h *Helper) (stop bool) {
	args := [5]uint64{m.regs[1], m.regs[2], m.regs[3], m.regs[4], m.regs[5]}
	ret := callNative(h.Addr, args[0], args[1], args[2], args[3], args[4])
	if h.UnwindOnZero && ret == 0 {
		m.regs[0] = 0
		return true
	}
	if p := h.Proto; p != nil {
		switch p.Ret {
		case helpers.RetMapValueOrNull:
			if mp := x.mapByHandle(args[0]); mp != nil && ret != 0 {
				m.addRegion(ret, uint64(mp.ValueSize), !mp.ReadOnly)
			}
		case helpers.RetAllocMemOrNull:
			if ret != 0 {
				m.addRegion(ret, args[1], true)
			}
		}
		for i, a := range p.Args {
			if a == helpers.ArgPtrToAllocMem {
				m.dropRegion(args[i])
			}
		}
	}
	m.regs[0] = ret
	return false
}

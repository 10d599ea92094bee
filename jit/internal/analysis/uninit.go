package analysis

import "github.com/ncclbpf/ncclbpf/asm"

// Register bit masks over eBPF registers.
const (
	regsArgs   = 1<<asm.R1 | 1<<asm.R2 | 1<<asm.R3 | 1<<asm.R4 | 1<<asm.R5
	regsCaller = 1<<asm.R0 | regsArgs // clobbered by a helper call
	// regsEntry are defined on entry: r1 = ctx, r2 = len, r10 = frame pointer.
	regsEntry = 1<<asm.R1 | 1<<asm.R2 | 1<<asm.R10
)

// ZeroOrder lists the registers the interpreter starts at 0, in the order
// the prologues zero them.
var ZeroOrder = [...]asm.Register{asm.R0, asm.R3, asm.R4, asm.R5, asm.R6, asm.R7, asm.R8, asm.R9}

// Frame is what the outermost function's prologue must provide.
type Frame struct {
	// Full: the program has BPF-to-BPF calls. The unwind and fault paths
	// leave from any depth and skip the epilogues of the functions in
	// between, so the outermost frame saves every callee-saved register
	// the backend uses, allocates the eBPF stack and anchors itself.
	Full bool
	// Named is the set of eBPF registers (bit r) some instruction names;
	// every register for a Full frame.
	Named uint16
	// Calls: some instruction calls a helper (call or callx).
	Calls bool
	// Zero are the registers to zero on entry, in ZeroOrder: all of them
	// for a Full frame, else those that some path may read before writing
	// them (MayReadUninit).
	Zero []asm.Register
}

// UsesStack reports whether the frame needs the eBPF stack (r10 named).
func (f Frame) UsesStack() bool { return f.Named&(1<<asm.R10) != 0 }

// Uses reports whether register r is named.
func (f Frame) Uses(r asm.Register) bool { return f.Named&(1<<r) != 0 }

// Frame decides what the outermost function's prologue must provide.
func (a *Info) Frame() Frame {
	if len(a.FuncStart) > 1 {
		return Frame{Full: true, Named: 1<<asm.NumRegisters - 1, Calls: true, Zero: ZeroOrder[:]}
	}
	var fr Frame
	for pc, ins := range a.insns {
		if a.Second[pc] {
			continue
		}
		fr.Named |= 1<<ins.Dst | 1<<ins.Src
		if ins.Op == asm.OpCall || ins.Op == asm.OpCallX {
			fr.Calls = true
		}
	}
	uninit := a.MayReadUninit()
	for _, r := range ZeroOrder {
		if uninit&(1<<r) != 0 {
			fr.Zero = append(fr.Zero, r)
		}
	}
	return fr
}

// regUse returns the eBPF registers ins may read and those it surely
// writes (as bit masks). Reads may be over-approximated and writes
// under-approximated: either only adds zeroing.
func regUse(ins asm.Instruction) (reads, writes uint16) {
	x := ins.Op.Source() == asm.SourceX
	dst, src := uint16(1)<<ins.Dst, uint16(1)<<ins.Src
	switch ins.Op.Class() {
	case asm.ClassALU, asm.ClassALU64:
		switch op := ins.Op.ALUOp(); op {
		case asm.ALUMov:
			if x {
				reads = src
			}
		case asm.ALUNeg, asm.ALUEnd:
			reads = dst
		default:
			reads = dst
			if x {
				reads |= src
			}
		}
		writes = dst
	case asm.ClassLD:
		writes = dst
	case asm.ClassLDX:
		reads, writes = src, dst
	case asm.ClassST:
		reads = dst
	case asm.ClassSTX:
		reads = dst | src
		if ins.Op.Mode() == asm.ModeAtomic {
			switch {
			case ins.Imm == asm.AtomicCmpXchg:
				reads |= 1 << asm.R0
				writes = 1 << asm.R0
			case ins.Imm&asm.AtomicFetch != 0:
				writes = src
			}
		}
	case asm.ClassJMP, asm.ClassJMP32:
		switch ins.Op.JumpOp() {
		case asm.JumpExit:
			reads = 1 << asm.R0
		case asm.JumpA:
		case asm.JumpCall:
			// Helpers receive r1-r5 whatever their prototype (the values are
			// observable through them); r0-r5 are defined afterwards (the
			// result, and what the interpreter keeps or the helper leaves).
			reads, writes = regsArgs, regsCaller
			switch {
			case x:
				reads |= dst
			case ins.Src == asm.PseudoCall:
				reads = 0x3ff // r0-r9: a subprogram may read anything
				writes = 0
			}
		default:
			reads = dst
			if x {
				reads |= src
			}
		}
	}
	return reads, writes
}

// MayReadUninit returns the registers (bit mask) that some path of the
// outermost function may read before writing them: a forward must-analysis
// of the defined registers (meet = intersection) over the control-flow
// graph. Only called for programs of one function.
func (a *Info) MayReadUninit() uint16 {
	n := len(a.insns)
	in := make([]uint16, n)
	for i := range in {
		in[i] = 0xffff // not reached yet: the identity of the meet
	}
	seen := make([]bool, n)
	in[0], seen[0] = regsEntry, true
	work := []int{0}
	flow := func(t int, out uint16) {
		if t < 0 || t >= n { // validation rejects such jumps; be safe anyway
			return
		}
		if !seen[t] || in[t]&out != in[t] {
			seen[t] = true
			in[t] &= out
			work = append(work, t)
		}
	}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		ins := a.insns[pc]
		_, writes := regUse(ins)
		out := in[pc] | writes
		switch {
		case ins.IsLdImm64():
			flow(pc+2, out)
		case ins.Op.Class().IsJump():
			switch op := ins.Op.JumpOp(); op {
			case asm.JumpExit:
			case asm.JumpCall:
				flow(pc+1, out)
			case asm.JumpA:
				off := int(ins.Off)
				if ins.Op.Class() == asm.ClassJMP32 {
					off = int(ins.Imm)
				}
				flow(pc+1+off, out)
			default:
				flow(pc+1, out)
				flow(pc+1+int(ins.Off), out)
			}
		default:
			flow(pc+1, out)
		}
	}
	var uninit uint16
	for pc, ins := range a.insns {
		if !seen[pc] {
			continue
		}
		reads, _ := regUse(ins)
		uninit |= reads &^ in[pc]
	}
	return uninit &^ regsEntry
}

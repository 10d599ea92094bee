package bundle

import "github.com/ncclbpf/ncclbpf/asm"

// ctxUse is what a program may read of its context, found by a
// conservative data-flow pass over its instructions: which registers may
// hold the context pointer (at which constant offset) at each pc, and which
// context bytes loads through them touch. Whenever the pointer is used in a
// way the pass does not follow (spilled, passed to a call, combined with a
// non-constant, held at two offsets), all is set and every byte counts as
// read. The host uses it to skip filling inputs a program never reads.
type ctxUse struct {
	all   bool
	reads []bool // per context byte
}

// Reads reports whether the program may read any byte of [off, off+size).
func (u *ctxUse) Reads(off, size int) bool {
	if u == nil || u.all {
		return true
	}
	for i := off; i < off+size; i++ {
		if i >= 0 && i < len(u.reads) && u.reads[i] {
			return true
		}
	}
	return false
}

const (
	regUnseen = -2 // no path reached this pc yet
	regNotCtx = -1 // not the context pointer
)

// stackSlots is the number of 8-byte slots of one stack frame.
const stackSlots = asm.StackSize / 8

// regState holds, per register and per 8-byte stack slot (a spilled
// register), regNotCtx, regUnseen or the offset into the context it points
// at.
type regState [asm.NumRegisters + stackSlots]int32

func analyzeCtx(insns []asm.Instruction, ctxSize int) *ctxUse {
	u := &ctxUse{reads: make([]bool, ctxSize)}
	n := len(insns)
	if n == 0 {
		return u
	}
	states := make([]regState, n)
	for i := range states {
		for r := range states[i] {
			states[i][r] = regUnseen
		}
	}
	var entry regState
	for r := range entry {
		entry[r] = regNotCtx
	}
	// Spills of the pointer to r10-relative slots are followed; if the frame
	// pointer is also copied anywhere, a slot could be read or written
	// through the copy, so then every byte counts as read.
	spilled, fpEscapes := false, false
	slot := func(off int16, size int) (int, bool) {
		if size != 8 || off >= 0 || off < -asm.StackSize || off%8 != 0 {
			return 0, false
		}
		return asm.NumRegisters + (asm.StackSize+int(off))/8, true
	}
	entry[asm.R1] = 0
	states[0] = entry
	work := []int{0}
	queued := make([]bool, n)
	queued[0] = true

	flow := func(pc int, s regState) {
		if pc < 0 || pc >= n {
			u.all = true
			return
		}
		changed := false
		for r := range s {
			old := states[pc][r]
			nv := join(old, s[r])
			if nv == -3 {
				u.all = true
				return
			}
			if nv != old {
				states[pc][r] = nv
				changed = true
			}
		}
		if changed && !queued[pc] {
			queued[pc] = true
			work = append(work, pc)
		}
	}
	isCtx := func(s *regState, r asm.Register) bool { return r < asm.NumRegisters && s[r] >= 0 }
	read := func(off int32, size int) {
		for i := int(off); i < int(off)+size; i++ {
			if i < 0 || i >= ctxSize {
				u.all = true
				return
			}
			u.reads[i] = true
		}
	}

	for len(work) > 0 && !u.all {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		queued[pc] = false
		s := states[pc]
		ins := insns[pc]
		cls := ins.Op.Class()
		next := pc + 1
		if ins.Dst >= asm.NumRegisters || ins.Src >= asm.NumRegisters {
			u.all = true
			break
		}
		switch {
		case ins.Op == asm.OpLdImm64:
			s[ins.Dst] = regNotCtx
			next = pc + 2
		case cls == asm.ClassLD: // legacy packet loads
			u.all = true
		case cls == asm.ClassLDX:
			if isCtx(&s, ins.Src) {
				read(s[ins.Src]+int32(ins.Off), ins.Op.Size().Bytes())
			}
			s[ins.Dst] = regNotCtx
			if ins.Src == asm.R10 && ins.Op.Mode() == asm.ModeMEM {
				if k, ok := slot(ins.Off, ins.Op.Size().Bytes()); ok {
					s[ins.Dst] = s[k] // a fill
				} else if spilled {
					u.all = true
				}
			}
		case cls == asm.ClassST:
			// a store of an immediate: nothing escapes; a spill slot it hits no longer holds the pointer
			if ins.Dst == asm.R10 {
				clearSlots(&s, ins.Off, ins.Op.Size().Bytes())
			}
		case cls == asm.ClassSTX:
			if ins.Dst == asm.R10 && ins.Op.Mode() == asm.ModeMEM {
				k, ok := slot(ins.Off, ins.Op.Size().Bytes())
				clearSlots(&s, ins.Off, ins.Op.Size().Bytes())
				if isCtx(&s, ins.Src) {
					if !ok {
						u.all = true
					}
					s[k] = s[ins.Src] // a spill
					spilled = true
				}
			} else if isCtx(&s, ins.Src) {
				u.all = true // the pointer is stored somewhere else
			} else if ins.Dst == asm.R10 {
				// an atomic on the stack: a spilled pointer there would be modified
				if k, ok := slot(ins.Off, 8); ok && s[k] >= 0 {
					u.all = true
				}
				clearSlots(&s, ins.Off, ins.Op.Size().Bytes())
			}
			if ins.Op.Mode() == asm.ModeAtomic {
				if isCtx(&s, ins.Dst) {
					read(s[ins.Dst]+int32(ins.Off), ins.Op.Size().Bytes())
				}
				if ins.Imm&asm.AtomicFetch != 0 {
					s[ins.Src] = regNotCtx
				}
				if ins.Imm == asm.AtomicCmpXchg {
					s[asm.R0] = regNotCtx
				}
			}
		case cls.IsALU():
			op := ins.Op.ALUOp()
			srcCtx := ins.Op.Source() == asm.SourceX && isCtx(&s, ins.Src)
			dstCtx := isCtx(&s, ins.Dst)
			if ins.Op.Source() == asm.SourceX && ins.Src == asm.R10 {
				fpEscapes = true
			}
			switch {
			case cls == asm.ClassALU64 && op == asm.ALUMov && ins.Op.Source() == asm.SourceX && ins.Off == 0:
				s[ins.Dst] = s[ins.Src]
			case cls == asm.ClassALU64 && dstCtx && !srcCtx && ins.Op.Source() == asm.SourceK && (op == asm.ALUAdd || op == asm.ALUSub):
				d := ins.Imm
				if op == asm.ALUSub {
					d = -d
				}
				s[ins.Dst] += d
			case srcCtx || dstCtx:
				u.all = true
			default:
				s[ins.Dst] = regNotCtx
			}
		case cls.IsJump():
			op := ins.Op.JumpOp()
			switch {
			case op == asm.JumpExit:
				continue
			case op == asm.JumpCall:
				if ins.Op.Source() == asm.SourceX || ins.Src == asm.PseudoCall {
					u.all = true // indirect or BPF-to-BPF call: not followed
					continue
				}
				for r := asm.R1; r <= asm.R5; r++ {
					if isCtx(&s, r) {
						u.all = true
					}
				}
				for r := asm.R0; r <= asm.R5; r++ {
					s[r] = regNotCtx
				}
			case op == asm.JumpA:
				off := int(ins.Off)
				if cls == asm.ClassJMP32 {
					off = int(ins.Imm)
				}
				flow(pc+1+off, s)
				continue
			default:
				flow(pc+1+int(ins.Off), s)
			}
		default:
			u.all = true
		}
		if !u.all {
			flow(next, s)
		}
	}
	if spilled && fpEscapes {
		u.all = true
	}
	return u
}

// clearSlots forgets the spilled pointers that a store of size bytes at
// r10+off overwrites.
func clearSlots(s *regState, off int16, size int) {
	for b := int(off); b < int(off)+size; b++ {
		if b < -asm.StackSize || b >= 0 {
			continue
		}
		s[asm.NumRegisters+(asm.StackSize+b)/8] = regNotCtx
	}
}

// join merges the states of one register from two paths; -3 means the
// pointer is at different offsets on the two paths.
func join(a, b int32) int32 {
	switch {
	case a == regUnseen:
		return b
	case b == regUnseen, a == b:
		return a
	case a == regNotCtx:
		return b // may hold the context: treated as holding it
	case b == regNotCtx:
		return a
	}
	return -3
}

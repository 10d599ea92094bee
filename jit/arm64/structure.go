package arm64

// Structural checks of a program. They mirror jit/amd64's (analyze.go and
// validate.go) so that both JITs and the interpreter accept the same
// programs; this file is the only place the arm64 backend checks structure.

import (
	"errors"
	"fmt"
	"sort"

	"github.com/ncclbpf/ncclbpf/asm"
)

// errAt formats a compile error at pc.
func errAt(pc int, ins asm.Instruction, format string, args ...any) error {
	return fmt.Errorf("pc %d (op %#02x): %s: %w", pc, uint8(ins.Op), fmt.Sprintf(format, args...), ErrInvalidProgram)
}

// analyze checks the program's structure and finds its functions.
func (c *compiler) analyze() error {
	n := len(c.insns)
	if n == 0 {
		return fmt.Errorf("no instructions: %w", ErrInvalidProgram)
	}
	if n > MaxInstructions {
		return fmt.Errorf("%d instructions, more than %d: %w", n, MaxInstructions, ErrInvalidProgram)
	}
	c.second = make([]bool, n)
	starts := []int32{0}
	for pc := 0; pc < n; pc++ {
		ins := c.insns[pc]
		if err := checkFields(ins); err != nil {
			return errAt(pc, ins, "%v", err)
		}
		switch {
		case ins.IsLdImm64():
			if pc+1 >= n {
				return errAt(pc, ins, "lddw has no second slot")
			}
			if next := c.insns[pc+1]; next.Op != 0 || next.Dst != 0 || next.Src != 0 || next.Off != 0 {
				return errAt(pc+1, next, "malformed second slot of lddw")
			}
			if ins.Src == asm.PseudoMapFD && c.insns[pc+1].Imm != 0 {
				return errAt(pc, ins, "lddw map(%d) with a second immediate", ins.Imm)
			}
			c.second[pc+1] = true
			pc++
		case ins.Op == asm.OpCall && ins.Src == asm.PseudoCall:
			t := pc + 1 + int(ins.Imm)
			if t < 0 || t >= n {
				return errAt(pc, ins, "call target %d outside the program", t)
			}
			starts = append(starts, int32(t))
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	c.funcStart = starts[:0]
	for i, s := range starts {
		if i == 0 || s != starts[i-1] {
			c.funcStart = append(c.funcStart, s)
		}
	}
	if last := n - 1; c.second[last] || fallsThrough(c.insns[last]) {
		return fmt.Errorf("pc %d: execution falls off the end of the program: %w", last, ErrInvalidProgram)
	}
	c.funcOf = make([]int32, n)
	f := int32(0)
	for pc := range n {
		for int(f)+1 < len(c.funcStart) && int(c.funcStart[f+1]) <= pc {
			f++
		}
		c.funcOf[pc] = f
		if c.second[pc] && int(c.funcStart[f]) == pc {
			return fmt.Errorf("pc %d: call target is the second slot of an lddw: %w", pc, ErrInvalidProgram)
		}
	}
	// Jumps stay inside their function and land on an instruction.
	callees := make([][]int32, len(c.funcStart))
	for pc := 0; pc < n; pc++ {
		ins := c.insns[pc]
		if c.second[pc] {
			continue
		}
		cl := ins.Op.Class()
		if !cl.IsJump() {
			continue
		}
		op := ins.Op.JumpOp()
		if op == asm.JumpExit {
			continue
		}
		if op == asm.JumpCall {
			if cl == asm.ClassJMP && ins.Op.Source() == asm.SourceK && ins.Src == asm.PseudoCall {
				t := int32(pc + 1 + int(ins.Imm))
				callees[c.funcOf[pc]] = append(callees[c.funcOf[pc]], c.funcOf[t])
			}
			if cl == asm.ClassJMP && ins.Op.Source() == asm.SourceX {
				c.hasCallx = true
			}
			continue
		}
		off := int(ins.Off)
		if cl == asm.ClassJMP32 && op == asm.JumpA {
			off = int(ins.Imm)
		}
		t := pc + 1 + off
		if t < 0 || t >= n {
			return errAt(pc, ins, "jump target %d outside the program", t)
		}
		if c.second[t] {
			return errAt(pc, ins, "jump target %d is the second slot of an lddw", t)
		}
		if c.funcOf[t] != c.funcOf[pc] {
			return errAt(pc, ins, "jump target %d is in another function (starting at pc %d)", t, c.funcStart[c.funcOf[t]])
		}
	}
	// Each function ends with exit or ja: no fall-through into the next.
	for f := 1; f < len(c.funcStart); f++ {
		last := int(c.funcStart[f]) - 1
		if c.second[last] {
			last--
		}
		if fallsThrough(c.insns[last]) {
			return errAt(last, c.insns[last], "execution falls through into the function at pc %d (a function must end with exit or ja)", c.funcStart[f])
		}
	}
	c.depthCheck = !callDepthOK(callees)
	for id, h := range c.prog.Helpers {
		if h.ID != id {
			return fmt.Errorf("helper table entry %d holds helper %d: %w", id, h.ID, ErrInvalidProgram)
		}
		if h.Addr == 0 {
			return fmt.Errorf("helper %v has no address: %w", id, ErrInvalidProgram)
		}
		c.helperIDs = append(c.helperIDs, int32(id))
	}
	sort.Slice(c.helperIDs, func(i, j int) bool { return c.helperIDs[i] < c.helperIDs[j] })
	if c.hasCallx && len(c.helperIDs) > 0 {
		maxID := c.helperIDs[len(c.helperIDs)-1]
		if c.helperIDs[0] < 0 || maxID >= maxCallxID {
			return fmt.Errorf("callx needs helper ids in [0, %d), the table has %d..%d: %w", maxCallxID, c.helperIDs[0], maxID, ErrInvalidProgram)
		}
		c.tableLen = maxID + 1
	}
	return nil
}

// maxCallxID bounds the ids callx can dispatch (the table is dense).
const maxCallxID = 1 << 12

// callDepthOK reports whether the call graph is acyclic and no chain of
// calls is deeper than MaxCallDepth frames.
func callDepthOK(callees [][]int32) bool {
	const (
		unseen = 0
		active = -1
	)
	depth := make([]int, len(callees)) // frames in the deepest chain starting here
	var visit func(f int32) bool
	visit = func(f int32) bool {
		switch depth[f] {
		case active:
			return false // cycle
		case unseen:
		default:
			return true
		}
		depth[f] = active
		d := 1
		for _, g := range callees[f] {
			if !visit(g) {
				return false
			}
			d = max(d, 1+depth[g])
		}
		depth[f] = d
		return true
	}
	for f := range callees {
		if !visit(int32(f)) {
			return false
		}
	}
	return depth[0] <= MaxCallDepth
}

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

// fallsThrough reports whether execution can continue after ins.
func fallsThrough(ins asm.Instruction) bool {
	switch ins.Op {
	case asm.OpExit, asm.OpJa, asm.OpJa32:
		return false
	}
	return true
}

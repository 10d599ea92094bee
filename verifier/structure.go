package verifier

import (
	"sort"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
)

// subprog is one function: the entry program or a BPF-to-BPF callee,
// spanning pcs [start, end).
type subprog struct {
	start, end int
	calls      []int // pcs of the pseudo-calls it makes
	depth      int   // stack bytes it uses (deepest offset, rounded to 8)
}

// validate checks the fields of every instruction: known opcodes, zero
// reserved fields, register numbers and map indexes.
func (ck *checker) validate() *Error {
	n := len(ck.insns)
	for pc := 0; pc < n; pc++ {
		ins := ck.insns[pc]
		if ins.Dst > asm.R10 || ins.Src > asm.R10 {
			return ck.errorf(InvalidRegister, pc, "register number %d is not one of r0-r10", max(ins.Dst, ins.Src))
		}
		if code, msg := validInsn(ins); code != 0 {
			return ck.errorf(code, pc, "%s", msg)
		}
		if ins.IsLdImm64() {
			if pc+1 >= n {
				return ck.errorf(InvalidOpcode, pc, "LD_IMM64 has no second slot")
			}
			sec := ck.insns[pc+1]
			if sec.Op != 0 || sec.Dst != 0 || sec.Src != 0 || sec.Off != 0 {
				return ck.errorf(InvalidOpcode, pc+1, "second slot of LD_IMM64 must have only an immediate")
			}
			if ins.Src == asm.PseudoMapFD || ins.Src == asm.PseudoMapValue {
				if ins.Imm < 0 || int(ins.Imm) >= len(ck.maps) {
					return ck.errorf(BadMapRef, pc, "map index %d is not one of the program's %d maps", ins.Imm, len(ck.maps))
				}
			}
			ck.second[pc+1] = true
			pc++
		}
	}
	return nil
}

// validInsn returns a code and reason when ins is not a valid instruction.
func validInsn(ins asm.Instruction) (Code, string) {
	op := ins.Op
	bad := func(why string) (Code, string) { return InvalidOpcode, why }
	switch c := op.Class(); c {
	case asm.ClassLD:
		if op != asm.OpLdImm64 {
			return bad("legacy packet loads (LD_ABS/LD_IND) and other LD forms are not supported")
		}
		if ins.Off != 0 || ins.Src > asm.PseudoMapValue {
			return bad("LD_IMM64 with a non-zero offset or an unsupported source")
		}
		if ins.Dst == asm.R10 {
			return InvalidRegister, "r10 is read-only"
		}
	case asm.ClassLDX:
		m := op.Mode()
		if m != asm.ModeMEM && !(m == asm.ModeMEMSX && op.Size() != asm.SizeDW) {
			return bad("unknown load mode")
		}
		if ins.Imm != 0 {
			return bad("load with a non-zero immediate")
		}
		if ins.Dst == asm.R10 {
			return InvalidRegister, "r10 is read-only"
		}
	case asm.ClassST:
		if op.Mode() != asm.ModeMEM || ins.Src != 0 {
			return bad("unknown store-immediate form")
		}
	case asm.ClassSTX:
		switch op.Mode() {
		case asm.ModeMEM:
			if ins.Imm != 0 {
				return bad("store with a non-zero immediate")
			}
		case asm.ModeAtomic:
			if op.Size() != asm.SizeW && op.Size() != asm.SizeDW {
				return bad("atomic operations are 32 or 64 bits wide")
			}
			switch ins.Imm {
			case asm.AtomicAdd, asm.AtomicOr, asm.AtomicAnd, asm.AtomicXor,
				asm.AtomicAdd | asm.AtomicFetch, asm.AtomicOr | asm.AtomicFetch,
				asm.AtomicAnd | asm.AtomicFetch, asm.AtomicXor | asm.AtomicFetch,
				asm.AtomicXchg, asm.AtomicCmpXchg:
			default:
				return bad("unknown atomic operation")
			}
			if ins.Imm&asm.AtomicFetch != 0 && ins.Src == asm.R10 {
				return InvalidRegister, "r10 is read-only"
			}
		default:
			return bad("unknown store mode")
		}
	case asm.ClassALU, asm.ClassALU64:
		a := op.ALUOp()
		if ins.Dst == asm.R10 {
			return InvalidRegister, "r10 is read-only"
		}
		if op.Source() == asm.SourceK && ins.Src != 0 {
			return bad("ALU with immediate operand and a non-zero source register")
		}
		if op.Source() == asm.SourceX && ins.Imm != 0 && a != asm.ALUEnd {
			return bad("ALU with register operand and a non-zero immediate")
		}
		switch a {
		case asm.ALUAdd, asm.ALUSub, asm.ALUMul, asm.ALUOr, asm.ALUAnd, asm.ALULsh, asm.ALURsh,
			asm.ALUXor, asm.ALUArsh:
			if ins.Off != 0 {
				return bad("ALU with a non-zero offset")
			}
		case asm.ALUDiv, asm.ALUMod:
			if ins.Off != 0 && ins.Off != 1 {
				return bad("division offset must be 0 (unsigned) or 1 (signed)")
			}
		case asm.ALUMov:
			ok := ins.Off == 0 || (op.Source() == asm.SourceX &&
				(ins.Off == 8 || ins.Off == 16 || (ins.Off == 32 && c == asm.ClassALU64)))
			if !ok {
				return bad("mov with an invalid sign-extension offset")
			}
		case asm.ALUNeg:
			if op.Source() != asm.SourceK || ins.Imm != 0 || ins.Off != 0 {
				return bad("neg with an operand")
			}
		case asm.ALUEnd:
			if ins.Off != 0 || ins.Src != 0 || (ins.Imm != 16 && ins.Imm != 32 && ins.Imm != 64) {
				return bad("byte swap width must be 16, 32 or 64")
			}
			if c == asm.ClassALU64 && op.Source() != asm.SourceK {
				return bad("unknown ALU64 byte swap form")
			}
		default:
			return bad("unknown ALU operation")
		}
	case asm.ClassJMP, asm.ClassJMP32:
		j := op.JumpOp()
		switch j {
		case asm.JumpA:
			if op.Source() != asm.SourceK || ins.Dst != 0 || ins.Src != 0 {
				return bad("goto with operands")
			}
			if c == asm.ClassJMP && ins.Imm != 0 || c == asm.ClassJMP32 && ins.Off != 0 {
				return bad("goto with both an offset and an immediate")
			}
		case asm.JumpCall:
			if c != asm.ClassJMP || op.Source() != asm.SourceK {
				return bad("indirect calls (callx) are not supported")
			}
			if ins.Dst != 0 || ins.Off != 0 || (ins.Src != asm.PseudoHelper && ins.Src != asm.PseudoCall) {
				return bad("call with unknown fields")
			}
		case asm.JumpExit:
			if c != asm.ClassJMP || ins.Op != asm.OpExit || ins.Dst != 0 || ins.Src != 0 || ins.Off != 0 || ins.Imm != 0 {
				return bad("exit with operands")
			}
		case asm.JumpEq, asm.JumpGT, asm.JumpGE, asm.JumpSet, asm.JumpNE, asm.JumpSGT, asm.JumpSGE,
			asm.JumpLT, asm.JumpLE, asm.JumpSLT, asm.JumpSLE:
			if op.Source() == asm.SourceK && ins.Src != 0 || op.Source() == asm.SourceX && ins.Imm != 0 {
				return bad("conditional jump with unused operand fields set")
			}
		default:
			return bad("unknown jump operation")
		}
	}
	return 0, ""
}

// jumpTarget returns the target of the jump at pc and whether ins jumps.
func jumpTarget(ins asm.Instruction, pc int) (int, bool) {
	c := ins.Op.Class()
	if !c.IsJump() {
		return 0, false
	}
	switch ins.Op.JumpOp() {
	case asm.JumpCall, asm.JumpExit:
		return 0, false
	case asm.JumpA:
		if c == asm.ClassJMP32 {
			return pc + 1 + int(ins.Imm), true
		}
	}
	return pc + 1 + int(ins.Off), true
}

// isGoto reports an unconditional jump.
func isGoto(ins asm.Instruction) bool {
	return ins.Op.Class().IsJump() && ins.Op.JumpOp() == asm.JumpA
}

func isPseudoCall(ins asm.Instruction) bool { return ins.Op == asm.OpCall && ins.Src == asm.PseudoCall }

// next returns the fall-through pc of the instruction at pc.
func (ck *checker) next(pc int) int {
	if ck.insns[pc].IsLdImm64() {
		return pc + 2
	}
	return pc + 1
}

// structure splits the program into subprograms and checks jumps, exits,
// reachability and the call graph.
func (ck *checker) structure() *Error {
	n := len(ck.insns)
	entries := map[int]bool{0: true}
	for pc := 0; pc < n; pc++ {
		ins := ck.insns[pc]
		if ck.second[pc] || !isPseudoCall(ins) {
			continue
		}
		t := pc + 1 + int(ins.Imm)
		if t < 0 || t >= n {
			return ck.errorf(JumpOutOfRange, pc, "call target pc %d is outside the program (0..%d)", t, n-1)
		}
		if ck.second[t] {
			return ck.errorf(JumpIntoLdImm64, pc, "call target pc %d is the second half of an LD_IMM64", t)
		}
		entries[t] = true
	}
	starts := make([]int, 0, len(entries))
	for e := range entries {
		starts = append(starts, e)
	}
	sort.Ints(starts)
	ck.subOf = make([]int, n)
	for i, s := range starts {
		end := n
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		ck.subs = append(ck.subs, subprog{start: s, end: end})
		for pc := s; pc < end; pc++ {
			ck.subOf[pc] = i
		}
	}
	for pc := 0; pc < n; pc++ {
		if ck.second[pc] {
			continue
		}
		ins := ck.insns[pc]
		sp := &ck.subs[ck.subOf[pc]]
		if t, ok := jumpTarget(ins, pc); ok {
			if t < 0 || t >= n {
				return ck.errorf(JumpOutOfRange, pc, "jump target pc %d is outside the program (0..%d)", t, n-1)
			}
			if ck.second[t] {
				return ck.errorf(JumpIntoLdImm64, pc, "jump target pc %d is the second half of the LD_IMM64 at pc %d", t, t-1)
			}
			if t < sp.start || t >= sp.end {
				return ck.errorf(BadJumpTarget, pc, "jump target pc %d leaves the function at pcs %d..%d", t, sp.start, sp.end-1)
			}
			ck.prune[t] = true
			if t <= pc {
				ck.loopHead[t] = true
				ck.loopEnd[t] = max(ck.loopEnd[t], pc)
			}
			if !isGoto(ins) && pc+1 < n {
				ck.prune[pc+1] = true
			}
		}
		if isPseudoCall(ins) {
			sp.calls = append(sp.calls, pc)
			ck.prune[pc+1+int(ins.Imm)] = true
		}
		falls := ins.Op != asm.OpExit && !isGoto(ins)
		if falls && ck.next(pc) >= sp.end {
			return ck.errorf(MissingExit, pc, "execution falls through past the end of the function at pcs %d..%d without exit", sp.start, sp.end-1)
		}
	}
	if e := ck.reachable(); e != nil {
		return e
	}
	return ck.callGraph()
}

// reachable rejects instructions no path reaches.
func (ck *checker) reachable() *Error {
	n := len(ck.insns)
	seen := make([]bool, n)
	work := []int{0}
	seen[0] = true
	push := func(t int) {
		if t >= 0 && t < n && !seen[t] {
			seen[t] = true
			work = append(work, t)
		}
	}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		ins := ck.insns[pc]
		if t, ok := jumpTarget(ins, pc); ok {
			push(t)
		}
		if isPseudoCall(ins) {
			push(pc + 1 + int(ins.Imm))
		}
		if ins.Op != asm.OpExit && !isGoto(ins) {
			push(ck.next(pc))
		}
	}
	for pc := 0; pc < n; pc++ {
		if !seen[pc] && !ck.second[pc] {
			return ck.errorf(UnreachableCode, pc, "no path from the entry reaches this instruction")
		}
	}
	return nil
}

// callGraph rejects recursion and call chains deeper than MaxCallDepth.
func (ck *checker) callGraph() *Error {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(ck.subs))
	height := make([]int, len(ck.subs)) // frames in the deepest chain from here
	var visit func(s int) *Error
	visit = func(s int) *Error {
		color[s] = grey
		height[s] = 1
		for _, pc := range ck.subs[s].calls {
			t := ck.subOf[pc+1+int(ck.insns[pc].Imm)]
			switch color[t] {
			case grey:
				return ck.errorf(CallDepth, pc, "recursive call: function at pc %d calls itself (directly or through others)", ck.subs[t].start)
			case white:
				if e := visit(t); e != nil {
					return e
				}
			}
			height[s] = max(height[s], height[t]+1)
		}
		color[s] = black
		return nil
	}
	if e := visit(0); e != nil {
		return e
	}
	if height[0] > ck.maxDepth {
		// report the call on the deepest chain that goes one frame too far
		s, frames := 0, 1
		for height[s] > 1 {
			for _, pc := range ck.subs[s].calls {
				t := ck.subOf[pc+1+int(ck.insns[pc].Imm)]
				if height[t]+1 != height[s] {
					continue
				}
				if frames+1 > ck.maxDepth {
					return ck.errorf(CallDepth, pc, "calls nest %d frames deep; at most %d are allowed", height[0], ck.maxDepth)
				}
				s, frames = t, frames+1
				break
			}
		}
	}
	return nil
}

// usesHelperArgs returns how many argument registers the call at ins
// reads: the helper's prototype, or all five for subprograms and unknown
// helpers.
func (ck *checker) callArgs(ins asm.Instruction) int {
	if ins.Src == asm.PseudoHelper {
		if p := ck.proto(helpers.ID(ins.Imm)); p != nil {
			return p.NumArgs()
		}
	}
	return 5
}

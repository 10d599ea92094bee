// Package structure validates the structure of an eBPF program once, for
// every consumer: the verifier, the reference interpreter and the JIT
// backends all start from the Program that Validate returns and trust it
// instead of checking the instructions again.
//
// Validate checks what does not depend on a program's meaning: every
// instruction is a known one with its reserved fields zero and its
// registers in r0-r10 (r10 never written); every LD_IMM64 has a well-formed
// second slot and a valid map index; every jump and BPF-to-BPF call lands
// on an instruction (not outside the program, not on the second slot of an
// LD_IMM64); the program splits into functions at pc 0 and at each call
// target, jumps stay inside their function, and no function falls through
// into the next or off the end.
//
// What it returns describes the program for code generation and analysis:
// the functions and their calls (Funcs, FuncOf, Callee), the kind of each
// slot (Kind) and the target of each jump and call (Target).
//
// Errors carry the verifier's stable codes (Code.String gives
// "E003 jump-out-of-range") and the pc at fault.
package structure

import (
	"fmt"
	"sort"

	"github.com/ncclbpf/ncclbpf/asm"
)

// Options says what Validate accepts beyond the common instruction set.
type Options struct {
	// Maps is the number of maps the program may refer to: the Imm of an
	// LD_IMM64 map-fd or map-value must be in [0, Maps).
	Maps int
	// Callx accepts callx (a helper call through a register). The engines
	// run it; the verifier refuses it.
	Callx bool
}

// Kind classifies an instruction slot.
type Kind uint8

// The kinds of slots.
const (
	// Plain: ALU, load, store and atomic instructions; execution
	// continues at pc+1.
	Plain Kind = iota
	// LdImm64: the first slot of an LD_IMM64; execution continues at pc+2.
	LdImm64
	// Second: the second slot of an LD_IMM64; not an instruction.
	Second
	// Goto: an unconditional jump (ja or gotol) to Target(pc).
	Goto
	// Branch: a conditional jump to Target(pc), falling through to pc+1.
	Branch
	// HelperCall: a call of the helper whose id is the Imm.
	HelperCall
	// LocalCall: a BPF-to-BPF call of the function starting at Target(pc).
	LocalCall
	// Callx: a helper call whose id is the value of register Dst.
	Callx
	// Exit: return from the function.
	Exit
)

// IsJump reports a Goto or a Branch.
func (k Kind) IsJump() bool { return k == Goto || k == Branch }

// Falls reports whether execution may continue with the next instruction.
func (k Kind) Falls() bool { return k != Goto && k != Exit && k != Second }

// Func is one function: the entry (Funcs[0]) or a BPF-to-BPF callee.
type Func struct {
	// Start and End bound its pcs: [Start, End).
	Start, End int
	// Calls are the pcs of the BPF-to-BPF calls it makes, ascending.
	Calls []int
}

// Program is a validated instruction sequence and its structure. It is
// read-only once Validate returns it.
type Program struct {
	// Insns are the instructions, as given to Validate (not copied).
	Insns []asm.Instruction
	// Funcs are the functions in pc order; Funcs[0] starts at pc 0.
	Funcs []Func

	slots []slot
	callx bool
	opts  Options
}

// slot is what Validate found about one instruction slot.
type slot struct {
	kind   Kind
	target int32 // jump or call target, -1 when none
	fn     int32 // index in Funcs of the function holding the slot
}

// Options returns the options the program was validated with.
func (p *Program) Options() Options { return p.opts }

// Len is the number of instruction slots.
func (p *Program) Len() int { return len(p.Insns) }

// Kind returns the kind of the slot at pc.
func (p *Program) Kind(pc int) Kind { return p.slots[pc].kind }

// IsSecond reports whether pc is the second slot of an LD_IMM64.
func (p *Program) IsSecond(pc int) bool { return p.slots[pc].kind == Second }

// Target returns the pc a jump or a BPF-to-BPF call at pc goes to, or -1
// for any other slot.
func (p *Program) Target(pc int) int { return int(p.slots[pc].target) }

// Next returns the pc after the instruction at pc (pc+2 for an LD_IMM64).
func (p *Program) Next(pc int) int {
	if p.slots[pc].kind == LdImm64 {
		return pc + 2
	}
	return pc + 1
}

// FuncOf returns the index in Funcs of the function holding pc.
func (p *Program) FuncOf(pc int) int { return int(p.slots[pc].fn) }

// Callee returns the index in Funcs of the function the local call at pc
// calls.
func (p *Program) Callee(pc int) int { return int(p.slots[p.slots[pc].target].fn) }

// HasCallx reports whether the program contains a callx.
func (p *Program) HasCallx() bool { return p.callx }

// Validate checks insns as described in the package comment and returns
// their structure, or the first fault in pc order: first the fields of
// each instruction, then the targets of calls, then jumps and fall-through.
func Validate(insns []asm.Instruction, o Options) (*Program, *Error) {
	n := len(insns)
	if n == 0 {
		return nil, errorf(MissingExit, 0, "the program is empty")
	}
	p := &Program{Insns: insns, slots: make([]slot, n), opts: o}
	for pc := 0; pc < n; pc++ {
		p.slots[pc].target = -1
		if e := p.checkInsn(pc, o); e != nil {
			return nil, e
		}
		if p.slots[pc].kind == LdImm64 {
			pc++
			p.slots[pc] = slot{kind: Second, target: -1}
		}
	}
	if e := p.split(); e != nil {
		return nil, e
	}
	if e := p.checkFlow(); e != nil {
		return nil, e
	}
	return p, nil
}

// split cuts the program into functions at pc 0 and at each call target.
func (p *Program) split() *Error {
	n := len(p.Insns)
	starts := []int{0}
	for pc := 0; pc < n; pc++ {
		if p.slots[pc].kind != LocalCall {
			continue
		}
		ins := p.Insns[pc]
		t := pc + 1 + int(ins.Imm)
		if t < 0 || t >= n {
			return errorf(JumpOutOfRange, pc, "call target pc %d is outside the program (0..%d)", t, n-1)
		}
		if p.slots[t].kind == Second {
			return errorf(JumpIntoLdImm64, pc, "call target pc %d is the second slot of an LD_IMM64", t)
		}
		p.slots[pc].target = int32(t)
		starts = append(starts, t)
	}
	sort.Ints(starts)
	for i, s := range starts {
		if i > 0 && s == starts[i-1] {
			continue
		}
		if len(p.Funcs) > 0 {
			p.Funcs[len(p.Funcs)-1].End = s
		}
		p.Funcs = append(p.Funcs, Func{Start: s, End: n})
	}
	for f := range p.Funcs {
		fn := &p.Funcs[f]
		for pc := fn.Start; pc < fn.End; pc++ {
			p.slots[pc].fn = int32(f)
			if p.slots[pc].kind == LocalCall {
				fn.Calls = append(fn.Calls, pc)
			}
		}
	}
	return nil
}

// checkFlow checks jump targets and that no function runs past its end.
func (p *Program) checkFlow() *Error {
	n := len(p.Insns)
	for pc := 0; pc < n; pc++ {
		k := p.slots[pc].kind
		if k == Second {
			continue
		}
		fn := p.Funcs[p.slots[pc].fn]
		if k.IsJump() {
			ins := p.Insns[pc]
			off := int(ins.Off)
			if ins.Op == asm.OpJa32 {
				off = int(ins.Imm)
			}
			t := pc + 1 + off
			if t < 0 || t >= n {
				return errorf(JumpOutOfRange, pc, "jump target pc %d is outside the program (0..%d)", t, n-1)
			}
			if p.slots[t].kind == Second {
				return errorf(JumpIntoLdImm64, pc, "jump target pc %d is the second slot of the LD_IMM64 at pc %d", t, t-1)
			}
			if t < fn.Start || t >= fn.End {
				return errorf(BadJumpTarget, pc, "jump target pc %d leaves the function at pcs %d..%d", t, fn.Start, fn.End-1)
			}
			p.slots[pc].target = int32(t)
		}
		if k.Falls() && p.Next(pc) >= fn.End {
			if fn.End == n {
				return errorf(MissingExit, pc, "execution falls off the end of the program without exit")
			}
			return errorf(MissingExit, pc, "execution falls through into the subprogram at pc %d (a subprogram must end with exit or goto)", fn.End)
		}
	}
	return nil
}

// CheckCalls rejects recursion and call chains of more than maxFrames
// frames (the entry function counts as one), reporting the call at fault.
func (p *Program) CheckCalls(maxFrames int) *Error {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(p.Funcs))
	height := make([]int, len(p.Funcs)) // frames in the deepest chain from here
	var visit func(f int) *Error
	visit = func(f int) *Error {
		color[f] = grey
		height[f] = 1
		for _, pc := range p.Funcs[f].Calls {
			t := p.Callee(pc)
			switch color[t] {
			case grey:
				return errorf(CallDepth, pc, "recursive call: function at pc %d calls itself (directly or through others)", p.Funcs[t].Start)
			case white:
				if e := visit(t); e != nil {
					return e
				}
			}
			height[f] = max(height[f], height[t]+1)
		}
		color[f] = black
		return nil
	}
	if e := visit(0); e != nil {
		return e
	}
	if height[0] <= maxFrames {
		return nil
	}
	// report the call on the deepest chain that goes one frame too far
	f, frames := 0, 1
	for {
		for _, pc := range p.Funcs[f].Calls {
			t := p.Callee(pc)
			if height[t]+1 != height[f] {
				continue
			}
			if frames+1 > maxFrames {
				return errorf(CallDepth, pc, "calls nest %d frames deep; at most %d are allowed", height[0], maxFrames)
			}
			f, frames = t, frames+1
			break
		}
	}
}

// Error is a structural fault.
type Error struct {
	// Code is the verifier's stable code for the fault.
	Code Code
	// PC is the instruction slot at fault.
	PC int
	// Msg says what is wrong.
	Msg string
}

// Error returns "pc 3: E003: msg".
func (e *Error) Error() string { return fmt.Sprintf("pc %d: %v: %s", e.PC, e.Code, e.Msg) }

func errorf(c Code, pc int, format string, args ...any) *Error {
	return &Error{Code: c, PC: pc, Msg: fmt.Sprintf(format, args...)}
}

// Code is a structural fault's kind. Its values are the numbers of the
// verifier's codes of the same name (verifier/codes.go); a test there
// keeps them in step.
type Code int

// The codes Validate and CheckCalls return.
const (
	InvalidOpcode   Code = 1
	InvalidRegister Code = 2
	JumpOutOfRange  Code = 3
	JumpIntoLdImm64 Code = 4
	MissingExit     Code = 5
	CallDepth       Code = 8
	BadMapRef       Code = 31
	BadJumpTarget   Code = 32
)

// String renders the code as its number, "E003"; the verifier's Code
// adds the name.
func (c Code) String() string { return fmt.Sprintf("E%03d", int(c)) }

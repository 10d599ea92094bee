package amd64

import (
	"fmt"
	"sort"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/execmem"
	"github.com/ncclbpf/ncclbpf/vm"
)

// MaxInstructions is the largest program (in slots) the JIT compiles; fault
// words carry the pc in 24 bits.
const MaxInstructions = 1 << 20

// MaxCallDepth is the number of frames (the main program and the
// BPF-to-BPF calls nested in it) that may be live at once. It is the
// interpreter's limit (vm.MaxCallDepth), as in Linux.
const MaxCallDepth = 8

// ErrInvalidProgram wraps every compile error caused by the program itself.
// It is vm.ErrInvalidProgram, so errors.Is works alike for both engines.
var ErrInvalidProgram = vm.ErrInvalidProgram

// regMap maps eBPF registers to x86-64 registers (see the package doc).
var regMap = [asm.NumRegisters]reg{rax, rdi, rsi, rdx, rcx, r8, rbx, r13, r14, r15, rbp}

// Scratch registers.
const (
	tmp1 = r9
	tmp2 = r10
	tmp3 = r11
	// frameReg holds rsp of the outermost frame (after its prologue).
	frameReg = r12
)

// Frame sizes (see the package doc).
const (
	mainStackAlloc = asm.StackSize + 8       // eBPF stack plus alignment
	subStackAlloc  = asm.StackSize           // eBPF stack
	subFrameSize   = 8 + 5*8 + subStackAlloc // return address, saved registers, stack
)

// engine is the JIT engine.
type engine struct{}

// New returns the x86-64 JIT engine (Name "jit").
func New() vm.Engine { return engine{} }

// Name returns "jit".
func (engine) Name() string { return "jit" }

// Compile compiles p to native code. The result is an *Executable.
func (engine) Compile(p *vm.Program) (vm.Executable, error) {
	x, err := Compile(p)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// Compile compiles p to native code.
func Compile(p *vm.Program) (*Executable, error) {
	if p == nil {
		return nil, fmt.Errorf("jit: compile: nil program: %w", ErrInvalidProgram)
	}
	c := &compiler{prog: p, insns: p.Insns}
	if err := c.analyze(); err != nil {
		return nil, fmt.Errorf("jit: program %q: %w", p.Name, err)
	}
	near := c.nearHint()
	size := c.sizeBound()
	for attempt := 0; ; attempt++ {
		blk, err := execmem.Reserve(size, near)
		if err != nil {
			return nil, fmt.Errorf("jit: program %q: %w", p.Name, err)
		}
		c.base = blk.Addr()
		if err := c.emitProgram(); err != nil {
			_ = blk.Free()
			return nil, fmt.Errorf("jit: program %q: %w", p.Name, err)
		}
		if len(c.b) > blk.Cap() {
			// The bound was too small: reserve what is needed and emit again
			// (code depends on its address through rel32 helper calls).
			_ = blk.Free()
			if attempt > 2 {
				return nil, fmt.Errorf("jit: program %q: code size %d keeps exceeding its reservation", p.Name, len(c.b))
			}
			size = len(c.b) + 4096
			continue
		}
		if err := blk.Seal(c.b); err != nil {
			_ = blk.Free()
			return nil, fmt.Errorf("jit: program %q: %w", p.Name, err)
		}
		mapOff := append([]int32(nil), c.pcOff...)
		for f := 1; f < len(c.funcStart); f++ {
			mapOff[c.funcStart[f]] = c.entryOff[f] // the prologue belongs to the entry pc
		}
		return &Executable{name: p.Name, block: blk, entry: blk.Addr(), pcOff: mapOff, code: blk.Code()}, nil
	}
}

// compiler holds the state of one compilation.
type compiler struct {
	enc
	prog  *vm.Program
	insns []asm.Instruction
	base  uintptr // address the code will run at

	// Analysis results.
	second     []bool  // slot pc is the second half of an LD_IMM64
	funcStart  []int32 // entry pcs of the functions, ascending; [0] = 0
	funcOf     []int32 // index into funcStart of the function holding each pc
	depthCheck bool    // emit a call-depth check at each BPF-to-BPF call
	helperIDs  []int32 // ids of p.Helpers, ascending (callx table order)
	tableLen   int32   // entries in the callx table (max id + 1), 0 if no callx
	hasCallx   bool

	// Emission state.
	pcOff     []int32 // native offset of each pc (len n+1)
	entryOff  []int32 // per function: offset of its prologue
	fixups    []fixup
	faults    []faultSite
	unwinds   []int32 // rel32 positions of jumps to the unwind stub
	tableRefs []int32 // rel32 positions of lea rip → callx table
}

type fixupKind uint8

const (
	fixJump fixupKind = iota // jump to pcOff[target]
	fixCall                  // call to entryOff[function of target]
)

// fixup is a rel32 field patched once all offsets are known.
type fixup struct {
	at     int32
	target int32
	kind   fixupKind
}

// faultSite is a jump (rel32 at "at") to an out-of-line fault stub.
type faultSite struct {
	at   int32
	word uint32
}

// nearHint returns an address the code should be placed near: the first
// helper, so that helper calls can be rel32.
func (c *compiler) nearHint() uintptr {
	var best uintptr
	for _, h := range c.prog.Helpers {
		if h.Addr != 0 && (best == 0 || h.Addr < best) {
			best = h.Addr
		}
	}
	return best
}

// maxSlotBytes bounds the code one instruction slot produces (the largest,
// an atomic fetch-or loop or a division, is under 64 bytes).
const maxSlotBytes = 96

func (c *compiler) sizeBound() int {
	n := len(c.insns)
	return 256 + n*maxSlotBytes + len(c.funcStart)*64 + int(c.tableLen)*8 + len(c.helperIDs)*32
}

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
	for id := range c.prog.Helpers {
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

// emitProgram emits the whole program at c.base.
func (c *compiler) emitProgram() error {
	n := len(c.insns)
	if c.b == nil {
		c.b = make([]byte, 0, 512+24*n) // typical size; append grows it
	}
	c.b = c.b[:0]
	c.fixups, c.faults, c.unwinds, c.tableRefs = c.fixups[:0], c.faults[:0], c.unwinds[:0], c.tableRefs[:0]
	if c.pcOff == nil {
		c.pcOff = make([]int32, n+1)
		c.entryOff = make([]int32, len(c.funcStart))
	}
	c.mainPrologue()
	for pc := 0; pc < n; pc++ {
		f := c.funcOf[pc]
		if f > 0 && int(c.funcStart[f]) == pc {
			c.entryOff[f] = c.len()
			c.subPrologue()
		}
		c.pcOff[pc] = c.len()
		ins := c.insns[pc]
		if err := c.emitInsn(pc, ins); err != nil {
			return err
		}
		if ins.IsLdImm64() {
			pc++
			c.pcOff[pc] = c.len()
		}
	}
	c.pcOff[n] = c.len()
	c.emitCold()
	for _, fx := range c.fixups {
		switch fx.kind {
		case fixJump:
			c.bindRel32(fx.at, c.pcOff[fx.target])
		case fixCall:
			c.bindRel32(fx.at, c.entryOff[c.funcOf[fx.target]])
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

// emitInsn emits one instruction (both slots of an LD_IMM64).
func (c *compiler) emitInsn(pc int, ins asm.Instruction) error {
	switch ins.Op.Class() {
	case asm.ClassALU, asm.ClassALU64:
		return c.alu(pc, ins)
	case asm.ClassJMP, asm.ClassJMP32:
		return c.jump(pc, ins)
	case asm.ClassLD:
		return c.ldImm64(pc, ins)
	case asm.ClassLDX:
		return c.load(pc, ins)
	case asm.ClassST, asm.ClassSTX:
		return c.store(pc, ins)
	}
	return errAt(pc, ins, "unknown instruction class")
}

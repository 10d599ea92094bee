package amd64

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/internal/analysis"
	"github.com/ncclbpf/ncclbpf/jit/internal/executable"
	"github.com/ncclbpf/ncclbpf/vm"
)

// MaxInstructions is the largest program (in slots) the JIT compiles; fault
// words carry the pc in 24 bits.
const MaxInstructions = analysis.MaxInstructions

// MaxCallDepth is the number of frames (the main program and the
// BPF-to-BPF calls nested in it) that may be live at once: the
// interpreter's limit, as in Linux.
const MaxCallDepth = vm.MaxCallDepth

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
	c, err := newCompiler(p)
	if err != nil {
		return nil, fmt.Errorf("jit: program %q: %w", p.Name, err)
	}
	blk, err := executable.Build(p.Name, c.sizeBound(), c.NearHint(), func(base uintptr) ([]byte, error) {
		c.base = base
		err := c.emitProgram()
		return c.b, err
	})
	if err != nil {
		return nil, err
	}
	return &Executable{executable.New(p.Name, "amd64", blk, c.pcOff, c.FuncStart, c.entryOff)}, nil
}

// compiler holds the state of one compilation.
type compiler struct {
	enc
	prog  *vm.Program
	insns []asm.Instruction
	base  uintptr // address the code will run at

	*analysis.Info           // what the lowering needs to know (jit/internal/analysis)
	frame          mainFrame // prologue and epilogue of the outermost function

	// Emission state.
	pcOff     []int32 // native offset of each pc (len n+1)
	entryOff  []int32 // per function: offset of its prologue
	fixups    []fixup
	faults    []faultSite
	unwinds   []int32 // rel32 positions of jumps to the unwind stub
	tableRefs []int32 // rel32 positions of lea rip → callx table
	fused     int     // pc of the ALU instruction its jump emitted (select.go), or -1
	flags     flagsAt // what the flags hold
}

// flagsAt records that the ALU instruction at pc left ZF set from its
// result, the w-bit value of reg, with the code ending at end.
type flagsAt struct {
	pc  int
	end int32
	reg reg
	w   bool
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

// newCompiler analyses p and plans its outermost frame.
func newCompiler(p *vm.Program) (*compiler, error) {
	a, err := analysis.Analyze(p)
	if err != nil {
		return nil, err
	}
	c := &compiler{Info: a, prog: p, insns: p.Insns}
	c.planFrame()
	return c, nil
}

// maxSlotBytes bounds the code one instruction slot produces (the largest,
// an atomic fetch-or loop or a division, is under 64 bytes).
const maxSlotBytes = 96

func (c *compiler) sizeBound() int {
	n := len(c.insns)
	return 256 + n*maxSlotBytes + len(c.FuncStart)*64 + int(c.TableLen)*8 + len(c.HelperIDs)*32
}

// emitProgram emits the whole program at c.base.
func (c *compiler) emitProgram() error {
	n := len(c.insns)
	if c.b == nil {
		c.b = make([]byte, 0, 512+24*n) // typical size; append grows it
	}
	c.b = c.b[:0]
	c.fixups, c.faults, c.unwinds, c.tableRefs = c.fixups[:0], c.faults[:0], c.unwinds[:0], c.tableRefs[:0]
	c.fused, c.flags = -1, flagsAt{pc: -1}
	if c.pcOff == nil {
		c.pcOff = make([]int32, n+1)
		c.entryOff = make([]int32, len(c.FuncStart))
	}
	if err := c.Lower(c, c.pcOff, c.entryOff); err != nil {
		return err
	}
	c.emitCold()
	for _, fx := range c.fixups {
		switch fx.kind {
		case fixJump:
			c.bindRel32(fx.at, c.pcOff[fx.target])
		case fixCall:
			c.bindRel32(fx.at, c.entryOff[c.FuncOf[fx.target]])
		}
	}
	return nil
}

// errAt formats a compile error at pc.
var errAt = analysis.ErrAt

package arm64

import (
	"encoding/binary"
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
// It is vm.ErrInvalidProgram, so errors.Is works alike for every engine.
var ErrInvalidProgram = vm.ErrInvalidProgram

// regMap maps eBPF registers to AArch64 registers (see the package doc).
var regMap = [asm.NumRegisters]reg{x7, x0, x1, x2, x3, x4, x19, x20, x21, x22, x23}

// Scratch registers: caller-saved temporaries that hold no eBPF register.
const (
	tmp1   = x9  // addresses, immediates
	tmp2   = x10 // second operand, loaded values
	tmp3   = x11 // loop results
	tmp4   = x12 // exclusive-store status
	ipReg  = x16 // helper addresses (IP0)
	tabReg = x17 // callx table (IP1)
	// frameReg holds sp of the outermost frame (after its prologue).
	frameReg = x24
)

// Frame sizes (see the package doc).
const subFrameSize = 16 + 48 + asm.StackSize // fp/lr, x19-x23 (+pad), eBPF stack

// Options selects code generation choices that otherwise follow the CPU.
type Options struct {
	// Atomics selects the lowering of atomic instructions: AtomicsAuto
	// (LSE when the CPU has FEAT_LSE, else exclusive-pair loops),
	// AtomicsLSE or AtomicsExclusive.
	Atomics AtomicsMode
}

// AtomicsMode says how atomic instructions are lowered.
type AtomicsMode uint8

// Atomic lowerings.
const (
	// AtomicsAuto follows the running CPU (HWCAP_ATOMICS).
	AtomicsAuto AtomicsMode = iota
	// AtomicsLSE uses the FEAT_LSE instructions (LDADDAL, SWPAL, CASAL, ...).
	AtomicsLSE
	// AtomicsExclusive uses LDAXR/STLXR loops followed by DMB ISH.
	AtomicsExclusive
)

// engine is the JIT engine.
type engine struct{ opts Options }

// New returns the AArch64 JIT engine (Name "jit").
func New() vm.Engine { return engine{} }

// NewWithOptions returns the AArch64 JIT engine with explicit options
// (tests use it to exercise both atomic lowerings).
func NewWithOptions(o Options) vm.Engine { return engine{opts: o} }

// Name returns "jit".
func (engine) Name() string { return "jit" }

// Compile compiles p to native code. The result is an *Executable.
func (e engine) Compile(p *vm.Program) (vm.Executable, error) {
	x, err := CompileWith(p, e.opts)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// Compile compiles p to AArch64 code with the default options.
func Compile(p *vm.Program) (*Executable, error) { return CompileWith(p, Options{}) }

// CompileWith compiles p to AArch64 code. On other architectures the code
// is produced (for sizes and disassembly) but cannot be run.
func CompileWith(p *vm.Program, o Options) (*Executable, error) {
	if p == nil {
		return nil, fmt.Errorf("jit: compile: nil program: %w", ErrInvalidProgram)
	}
	c, err := newCompiler(p)
	if err != nil {
		return nil, fmt.Errorf("jit: program %q: %w", p.Name, err)
	}
	switch o.Atomics {
	case AtomicsAuto:
		c.lse = hasLSE()
	case AtomicsLSE:
		c.lse = true
	case AtomicsExclusive:
	default:
		return nil, fmt.Errorf("jit: program %q: unknown atomics mode %d", p.Name, o.Atomics)
	}
	size := 256 + len(c.insns)*maxSlotBytes + int(c.TableLen)*8 + len(c.HelperIDs)*48
	blk, err := executable.Build(p.Name, size, c.NearHint(), func(base uintptr) ([]byte, error) {
		c.base = base
		err := c.emitProgram()
		if err == errBranchRange && !c.long {
			// A conditional branch is beyond ±1 MiB: emit all of them as an
			// inverted branch over an unconditional one.
			c.long = true
			err = c.emitProgram()
		}
		return c.b, err
	})
	if err != nil {
		return nil, err
	}
	syncICache(blk.Addr(), blk.Len())
	return &Executable{executable.New(p.Name, "arm64", blk, c.pcOff, c.FuncStart, c.entryOff)}, nil
}

// maxSlotBytes bounds the code of one instruction slot (the largest, an
// exclusive-loop atomic with a far offset or a helper call, is under 20
// instructions).
const maxSlotBytes = 96

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

// compiler holds the state of one compilation.
type compiler struct {
	prog  *vm.Program
	insns []asm.Instruction
	base  uintptr
	lse   bool // FEAT_LSE atomics
	long  bool // conditional branches as b.!cond +8; b target

	*analysis.Info           // what the lowering needs to know (jit/internal/analysis)
	frame          mainFrame // prologue and epilogue of the outermost function

	// Emission state.
	b        []byte
	pcOff    []int32
	entryOff []int32
	fixups   []fixup
	faults   []uint32 // fault words, label labFirstFault+i
	unwinds  bool     // some helper call unwinds on zero
	fused    int      // pc of the ALU instruction its jump emitted (select.go), or -1
}

type targetKind uint8

const (
	toPC    targetKind = iota // pcOff[target]
	toFunc                    // entryOff[function of pc target]
	toLabel                   // labels[target]
	toAbs64                   // 4-instruction movz/movk: absolute address of labels[target]
)

type branchKind uint8

const (
	brImm26 branchKind = iota // B, BL
	brImm19                   // B.cond, CBZ, CBNZ
)

// fixup is a branch (or address) patched once all offsets are known.
type fixup struct {
	at     int32
	target int32
	tk     targetKind
	bk     branchKind
}

// Out-of-line labels.
const (
	labRet    = iota // common return: sp from the anchor, restore, ret
	labUnwind        // r0 = 0, fault = 0, common return
	labTable         // callx table
	labFirstFault
)

var errBranchRange = fmt.Errorf("conditional branch out of range")

// Len is the number of bytes emitted so far.
func (c *compiler) Len() int32 { return int32(len(c.b)) }

// emit appends instruction words.
func (c *compiler) emit(ws ...uint32) {
	for _, w := range ws {
		c.b = binary.LittleEndian.AppendUint32(c.b, w)
	}
}

func (c *compiler) word(at int32) uint32   { return binary.LittleEndian.Uint32(c.b[at:]) }
func (c *compiler) put(at int32, w uint32) { binary.LittleEndian.PutUint32(c.b[at:], w) }

// emitProgram emits the whole program at c.base.
func (c *compiler) emitProgram() error {
	n := len(c.insns)
	c.b = c.b[:0]
	c.fixups = c.fixups[:0]
	c.faults = c.faults[:0]
	c.unwinds = false
	c.fused = -1
	c.pcOff = make([]int32, n+1)
	c.entryOff = make([]int32, len(c.FuncStart))
	if err := c.Lower(c, c.pcOff, c.entryOff); err != nil {
		return err
	}
	labels := c.emitCold()
	for _, fx := range c.fixups {
		var to int32
		switch fx.tk {
		case toPC:
			to = c.pcOff[fx.target]
		case toFunc:
			to = c.entryOff[c.FuncOf[fx.target]]
		case toLabel, toAbs64:
			to = labels[fx.target]
		}
		if fx.tk == toAbs64 {
			c.patchAbs64(fx.at, uint64(c.base)+uint64(to))
			continue
		}
		d := to - fx.at
		w := c.word(fx.at)
		switch fx.bk {
		case brImm26:
			w |= uint32(d/4) & 0x3ffffff
		case brImm19:
			if d < -(1<<20) || d >= 1<<20 {
				return errBranchRange
			}
			w |= (uint32(d/4) & 0x7ffff) << 5
		}
		c.put(fx.at, w)
	}
	return nil
}

// branch emits B (always) or B.cond to a target patched later.
func (c *compiler) branch(cc cond, tk targetKind, target int32) {
	if cc == condAL {
		c.fixups = append(c.fixups, fixup{at: c.Len(), target: target, tk: tk, bk: brImm26})
		c.emit(encB(0))
		return
	}
	if c.long {
		c.emit(encBcond(cc.invert(), 8))
		c.fixups = append(c.fixups, fixup{at: c.Len(), target: target, tk: tk, bk: brImm26})
		c.emit(encB(0))
		return
	}
	c.fixups = append(c.fixups, fixup{at: c.Len(), target: target, tk: tk, bk: brImm19})
	c.emit(encBcond(cc, 0))
}

// cbz emits CBZ (or CBNZ when nz) of a 64-bit register to a label.
func (c *compiler) cbz(nz bool, r reg, label int32) {
	if c.long {
		if nz {
			c.emit(encCBZ(true, r, 8))
		} else {
			c.emit(encCBNZ(true, r, 8))
		}
		c.branch(condAL, toLabel, label)
		return
	}
	c.fixups = append(c.fixups, fixup{at: c.Len(), target: label, tk: toLabel, bk: brImm19})
	if nz {
		c.emit(encCBNZ(true, r, 0))
	} else {
		c.emit(encCBZ(true, r, 0))
	}
}

// cbzTo emits CBZ (or CBNZ when nz) of r (w: 64-bit) to pc target: back
// to an emitted offset at once, forward through a fix-up.
func (c *compiler) cbzTo(nz, w bool, r reg, pc, target int) {
	enc, inv := encCBZ, encCBNZ
	if nz {
		enc, inv = encCBNZ, encCBZ
	}
	if target <= pc {
		to := c.pcOff[target]
		if d := to - c.Len(); d >= -(1<<20) && !c.long {
			c.emit(enc(w, r, d))
			return
		}
		c.emit(inv(w, r, 8))
		c.emit(encB(to - c.Len()))
		return
	}
	if c.long {
		c.emit(inv(w, r, 8))
		c.branch(condAL, toPC, int32(target))
		return
	}
	c.fixups = append(c.fixups, fixup{at: c.Len(), target: int32(target), tk: toPC, bk: brImm19})
	c.emit(enc(w, r, 0))
}

// branchBack emits a branch to an already emitted offset.
func (c *compiler) branchBack(cc cond, to int32) {
	d := to - c.Len()
	if cc == condAL {
		c.emit(encB(d))
		return
	}
	if d >= -(1<<20) && !c.long {
		c.emit(encBcond(cc, d))
		return
	}
	c.emit(encBcond(cc.invert(), 8))
	c.emit(encB(to - c.Len()))
}

// loadImm sets r to v: 64-bit (w) or 32-bit zero-extended, with the
// shortest MOVZ/MOVN + MOVK sequence.
func (c *compiler) loadImm(w bool, r reg, v uint64) {
	parts := 4
	if !w {
		parts = 2
		v &= 0xffffffff
	}
	zeros, ones := 0, 0
	for i := range parts {
		switch uint16(v >> (16 * i)) {
		case 0:
			zeros++
		case 0xffff:
			ones++
		}
	}
	inverted := ones > zeros
	skip := uint16(0)
	if inverted {
		skip = 0xffff
	}
	first := true
	for i := range parts {
		h := uint16(v >> (16 * i))
		if h == skip && !(first && i == parts-1) {
			continue
		}
		switch {
		case first && inverted:
			c.emit(encMovWide(opMOVN, w, r, ^h, uint(i)))
		case first:
			c.emit(encMovWide(opMOVZ, w, r, h, uint(i)))
		default:
			c.emit(encMovWide(opMOVK, w, r, h, uint(i)))
		}
		first = false
	}
}

// patchAbs64 writes a MOVZ/MOVK sequence of 4 instructions at "at" that
// loads v into the register the placeholder names.
func (c *compiler) patchAbs64(at int32, v uint64) {
	r := reg(c.word(at) & 31)
	for i := range 4 {
		op := opMOVK
		if i == 0 {
			op = opMOVZ
		}
		c.put(at+int32(4*i), encMovWide(op, true, r, uint16(v>>(16*i)), uint(i)))
	}
}

// loadAbs64Label emits a placeholder for the absolute address of a label.
func (c *compiler) loadAbs64Label(r reg, label int32) {
	c.fixups = append(c.fixups, fixup{at: c.Len(), target: label, tk: toAbs64})
	for range 4 {
		c.emit(encMovWide(opMOVZ, true, r, 0, 0))
	}
}

// mov64 copies a register (64 bits); movSP/fromSP use the ADD #0 form.
func (c *compiler) mov64(rd, rn reg) {
	if rd != rn {
		c.emit(encRRR(opORR, true, rd, xzr, rn))
	}
}

// errAt formats a compile error at pc.
var errAt = analysis.ErrAt

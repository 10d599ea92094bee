package vm

import (
	"fmt"
	"slices"
	"sync"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
)

// DefaultBudget is the number of instructions one Run may execute before
// the interpreter stops it with ErrBudget.
const DefaultBudget = 100_000_000

// MaxCallDepth is the number of frames (the main program and the
// BPF-to-BPF calls nested in it) that may be live at once, as in Linux.
const MaxCallDepth = 8

// MaxInstructions is the longest program the interpreter accepts (Linux's
// limit for privileged programs).
const MaxInstructions = 1 << 20

// InterpOption configures the interpreter. Options are applied once, by
// NewInterpreter; the resulting engine is immutable.
type InterpOption func(*interpConfig)

// Region is native memory, outside the mem buffer and the stack, that
// programs run by the interpreter may access (global data the host maps, a
// shared table, ...).
type Region struct {
	Name     string
	Addr     uintptr
	Size     uintptr
	Writable bool
}

// MemRange is a part of the mem buffer given to Run. When a layout is set
// with WithMemLayout, every access to mem must lie entirely inside one
// range, a load needs a Readable range and a store a Writable one. Ranges
// may not overlap.
type MemRange struct {
	Offset   int
	Size     int
	Readable bool
	Writable bool
}

type interpConfig struct {
	trace     func(*TraceState)
	budget    uint64
	regions   []Region
	memLayout []MemRange
	hasLayout bool
}

// WithBudget sets the number of instructions one Run may execute (0 selects
// DefaultBudget: the interpreter never runs unbounded).
func WithBudget(n uint64) InterpOption {
	return func(c *interpConfig) { c.budget = n }
}

// TraceState is the machine state shown to a trace function: valid only
// during the call, and not to be modified.
type TraceState struct {
	// PC is the instruction about to execute.
	PC int
	// Depth is the current frame: 0 in the main program, 1 in a function
	// it called, ...
	Depth int
	// Regs are r0-r10.
	Regs *[asm.NumRegisters]uint64
	// Stack is the current frame's stack: Stack[len(Stack)-1] is the byte
	// at r10-1.
	Stack []byte
}

// WithTrace calls fn before every instruction, with the state about to be
// used (a soundness oracle can check it against the verifier's invariant
// at that pc). fn must not retain the state. Tracing slows the interpreter
// down; without it, the cost is one predictable branch per instruction.
func WithTrace(fn func(*TraceState)) InterpOption {
	return func(c *interpConfig) { c.trace = fn }
}

// WithRegion adds native memory that programs may access in every Run.
func WithRegion(r Region) InterpOption {
	return func(c *interpConfig) { c.regions = append(c.regions, r) }
}

// WithMemLayout restricts accesses to the mem buffer to the given ranges
// (a hook context with read-only and writable fields, say). Without it the
// whole buffer is readable and writable.
func WithMemLayout(ranges ...MemRange) InterpOption {
	return func(c *interpConfig) {
		c.memLayout = append([]MemRange(nil), ranges...)
		c.hasLayout = true
	}
}

// ContextLayout returns the mem layout of a hook context: one range per
// field (per element of an array field) with the field's access rights, so
// that an access must lie inside one field element, as the verifier
// requires (hook.Context.FieldAt).
func ContextLayout(c *hook.Context) []MemRange {
	var out []MemRange
	for _, f := range c.Fields {
		n := max(f.Array, 1)
		for i := range n {
			out = append(out, MemRange{Offset: f.Offset + i*f.Size, Size: f.Size,
				Readable: f.Access&hook.Read != 0, Writable: f.Access&hook.Write != 0})
		}
	}
	return out
}

// Interpreter is the reference engine: it executes instructions one by one
// with the semantics of RFC 9669 and traps every memory access outside the
// regions it knows of (see interp_mem.go). The choices the RFC leaves open,
// or that only matter for programs the verifier rejects:
//
//   - Division by zero gives 0; modulo by zero leaves dst (32-bit forms:
//     its low half, zero-extended); signed INT_MIN / -1 gives INT_MIN and
//     INT_MIN % -1 gives 0. Shift amounts are masked to 31 or 63.
//   - Byte swaps assume a little-endian host (le16/le32 truncate, be*
//     swap). ncclbpf runs on x86-64.
//   - Every frame's stack is zeroed when the frame is entered. The JIT
//     leaves it as it finds it; verified programs never read stack bytes
//     they did not write.
//   - After a helper call r1-r5 keep their values (the JIT's native
//     helpers clobber them; verified programs never read them).
//   - A BPF-to-BPF call passes r1-r5, keeps r6-r9 visible to the callee
//     and restores them, with r10, when the callee exits. Recursion is
//     allowed up to MaxCallDepth frames (the verifier forbids it).
//   - callx (JMP|CALL|X) calls the helper whose id is the value of the
//     register in Dst (Src and Imm are 0), as the bpf_conformance
//     assembler encodes `call %rN`.
//   - Atomics use sync/atomic on the target address, so programs that share
//     maps across threads see real atomic operations; they must be
//     naturally aligned (ErrMisaligned), plain loads and stores need not.
//   - Compile rejects what Linux rejects structurally: unknown opcodes,
//     reserved fields that are set, writes to r10, jumps out of the
//     program, into an LD_IMM64 or across subprograms, subprograms that
//     fall through, calls to helpers not in the table.
type Interpreter struct {
	cfg interpConfig
}

// NewInterpreter returns the reference interpreter configured by opts.
func NewInterpreter(opts ...InterpOption) Engine {
	var cfg interpConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.budget == 0 {
		cfg.budget = DefaultBudget
	}
	cfg.regions = append([]Region(nil), cfg.regions...)
	return &Interpreter{cfg: cfg}
}

// Name returns "interp".
func (*Interpreter) Name() string { return "interp" }

// Compile validates p (every instruction is known and well formed, every
// jump and call lands on an instruction, every helper exists) and returns
// an executable that interprets it.
func (it *Interpreter) Compile(p *Program) (Executable, error) {
	if p == nil {
		return nil, fmt.Errorf("interp: compile: nil program: %w", ErrInvalidProgram)
	}
	x := &interpExec{
		name:   p.Name,
		insns:  slices.Clone(p.Insns),
		budget: it.cfg.budget,
		trace:  it.cfg.trace,
		maps:   append([]MapRef(nil), p.Maps...),
	}
	if err := x.decode(p); err != nil {
		return nil, err
	}
	for _, r := range it.cfg.regions {
		if r.Size == 0 {
			continue
		}
		start := uint64(r.Addr)
		if start+uint64(r.Size) < start {
			return nil, fmt.Errorf("interp: program %q: region %q wraps around the address space: %w", p.Name, r.Name, ErrInvalidProgram)
		}
		x.static = append(x.static, nativeRegion(start, uint64(r.Size), r.Writable))
	}
	if it.cfg.hasLayout {
		x.hasLayout = true
		x.layout = slices.Clone(it.cfg.memLayout)
		slices.SortFunc(x.layout, func(a, b MemRange) int { return a.Offset - b.Offset })
		for i, m := range x.layout {
			if m.Offset < 0 || m.Size <= 0 {
				return nil, fmt.Errorf("interp: program %q: mem range at %d size %d is empty or negative: %w", p.Name, m.Offset, m.Size, ErrInvalidProgram)
			}
			if i > 0 && x.layout[i-1].Offset+x.layout[i-1].Size > m.Offset {
				return nil, fmt.Errorf("interp: program %q: mem ranges at %d and %d overlap: %w", p.Name, x.layout[i-1].Offset, m.Offset, ErrInvalidProgram)
			}
		}
	}
	x.pool.New = func() any { return new(machine) }
	return x, nil
}

// interpExec is a compiled program. It is immutable; per-run state lives in
// a machine taken from pool.
type interpExec struct {
	name      string
	insns     []asm.Instruction // as given, for error messages
	code      []insn
	maps      []MapRef
	helpers   []Helper // indexed by insn.aux for static helper calls
	byID      HelperTable
	static    []region // WithRegion regions and arrays referenced by map-value loads
	layout    []MemRange
	hasLayout bool
	budget    uint64
	trace     func(*TraceState)
	pool      sync.Pool
}

// insn is a decoded instruction with its operands resolved.
type insn struct {
	op  asm.OpCode
	dst uint8
	src uint8
	fop uint8 // fast path, see interp_fast.go
	off int16
	imm int32
	// k is the immediate as a 64-bit operand: sign-extended imm for ALU,
	// jump and store instructions, the 64-bit value of LD_IMM64 (map
	// references resolved).
	k uint64
	// aux is the jump or call target pc, or the index into helpers.
	aux int32
}

// Close releases nothing: the interpreter holds only Go memory.
func (x *interpExec) Close() error { return nil }

// mapByHandle returns the map whose handle is h.
func (x *interpExec) mapByHandle(h uint64) *MapRef {
	for i := range x.maps {
		if uint64(x.maps[i].Handle) == h && h != 0 {
			return &x.maps[i]
		}
	}
	return nil
}

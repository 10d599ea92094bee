package vm_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/vm"
	"github.com/ncclbpf/ncclbpf/vm/internal/testhelpers"
)

// Differential tests: random programs that cannot fault or loop (ALU,
// forward jumps, stack loads, stores and atomics, helper calls by id and
// callx, BPF-to-BPF calls) must return the same r0 and leave the same stack
// on the interpreter and on the JIT.

// gen builds random safe programs from a byte stream (fuzzing) or a PRNG.
type gen struct {
	next  func() uint64
	insns []asm.Instruction
}

func (g *gen) n(k int) int { return int(g.next() % uint64(k)) }

func (g *gen) emit(ins ...asm.Instruction) { g.insns = append(g.insns, ins...) }

// operand returns an interesting 64-bit value.
func (g *gen) value() uint64 {
	edges := []uint64{0, 1, 2, 7, 31, 32, 33, 63, 64, 65, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff,
		0x7fffffff, 0x80000000, 0xffffffff, 1 << 32, 1<<63 - 1, 1 << 63, ^uint64(0), ^uint64(1)}
	if g.n(2) == 0 {
		return edges[g.n(len(edges))]
	}
	return g.next()
}

func (g *gen) reg() asm.Register { return asm.Register(g.n(10)) }

var aluOps = []asm.ALUOp{asm.ALUAdd, asm.ALUSub, asm.ALUMul, asm.ALUDiv, asm.ALUOr, asm.ALUAnd, asm.ALULsh,
	asm.ALURsh, asm.ALUNeg, asm.ALUMod, asm.ALUXor, asm.ALUMov, asm.ALUArsh, asm.ALUEnd}

var jumpOps = []asm.JumpOp{asm.JumpEq, asm.JumpGT, asm.JumpGE, asm.JumpSet, asm.JumpNE, asm.JumpSGT,
	asm.JumpSGE, asm.JumpLT, asm.JumpLE, asm.JumpSLT, asm.JumpSLE}

func (g *gen) alu() asm.Instruction {
	class := asm.ClassALU64
	if g.n(2) == 0 {
		class = asm.ClassALU
	}
	op := aluOps[g.n(len(aluOps))]
	src := asm.SourceK
	if g.n(2) == 0 {
		src = asm.SourceX
	}
	in := asm.Instruction{Dst: g.reg(), Imm: int32(g.value())}
	switch op {
	case asm.ALUNeg:
		src, in.Imm = asm.SourceK, 0
	case asm.ALUEnd:
		in.Imm = []int32{16, 32, 64}[g.n(3)]
		if class == asm.ClassALU64 {
			src = asm.SourceK
		}
	case asm.ALUDiv, asm.ALUMod:
		in.Off = int16(g.n(2))
	case asm.ALUMov:
		if src == asm.SourceX {
			offs := []int16{0, 8, 16, 32}
			if class == asm.ClassALU {
				offs = offs[:3]
			}
			in.Off = offs[g.n(len(offs))]
		}
	}
	if src == asm.SourceX && op != asm.ALUEnd {
		in.Src, in.Imm = g.reg(), 0
	}
	in.Op = asm.ALUOpCode(class, op, src)
	return in
}

func (g *gen) mem() asm.Instruction {
	sizes := []asm.Size{asm.SizeB, asm.SizeH, asm.SizeW, asm.SizeDW}
	s := sizes[g.n(4)]
	w := s.Bytes()
	off := -int16(w + g.n(asm.StackSize-w+1))
	switch g.n(5) {
	case 0:
		return asm.Instruction{Op: asm.MemOpCode(asm.ClassST, asm.ModeMEM, s), Dst: asm.R10, Off: off, Imm: int32(g.value())}
	case 1:
		return asm.Instruction{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeMEM, s), Dst: asm.R10, Src: g.reg(), Off: off}
	case 2:
		mode := asm.ModeMEM
		if s != asm.SizeDW && g.n(2) == 0 {
			mode = asm.ModeMEMSX
		}
		return asm.Instruction{Op: asm.MemOpCode(asm.ClassLDX, mode, s), Dst: g.reg(), Src: asm.R10, Off: off}
	default:
		s = []asm.Size{asm.SizeW, asm.SizeDW}[g.n(2)]
		w = s.Bytes()
		off = -int16(w * (1 + g.n(asm.StackSize/w)))
		ops := []int32{asm.AtomicAdd, asm.AtomicOr, asm.AtomicAnd, asm.AtomicXor}
		op := ops[g.n(4)] | int32(g.n(2))*asm.AtomicFetch
		switch g.n(4) {
		case 0:
			op = asm.AtomicXchg
		case 1:
			op = asm.AtomicCmpXchg
		}
		return asm.Instruction{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeAtomic, s), Dst: asm.R10, Src: g.reg(), Off: off, Imm: op}
	}
}

// item is one step of a generated body: instructions, and for a jump the
// index of the item it targets (the offset is fixed at layout).
type item struct {
	insns  []asm.Instruction
	target int // -1: not a jump
	callFn int // -1: not a local call; else the function called
}

const (
	idSum    = helpers.ID(1001)
	idUnwind = helpers.ID(5)
)

// diffHelpers are pure native helpers, callable by both engines.
var diffHelpers = vm.HelperTable{
	idSum:    {ID: idSum, Addr: testhelpers.Sum},
	idUnwind: {ID: idUnwind, Addr: testhelpers.Unwind, UnwindOnZero: true},
}

// reinit sets r1-r5 to fresh values: they are undefined after a helper call
// (the JIT's helpers clobber them; the interpreter keeps them).
func (g *gen) reinit() []asm.Instruction {
	var out []asm.Instruction
	for r := asm.R1; r <= asm.R5; r++ {
		pair := asm.LdImm64(r, g.value())
		out = append(out, pair[0], pair[1])
	}
	return out
}

// body returns n random items of function fn (of nfn functions).
func (g *gen) body(n, fn, nfn int) []item {
	items := make([]item, 0, n)
	for i := 0; i < n; i++ {
		it := item{target: -1, callFn: -1}
		switch k := g.n(20); {
		case k < 11:
			it.insns = []asm.Instruction{g.alu()}
		case k < 15:
			it.insns = []asm.Instruction{g.mem()}
		case k < 18:
			class := asm.ClassJMP
			if g.n(2) == 0 {
				class = asm.ClassJMP32
			}
			op := jumpOps[g.n(len(jumpOps))]
			j := asm.Instruction{Dst: g.reg()}
			if g.n(2) == 0 {
				j.Op, j.Src = asm.JumpOpCode(class, op, asm.SourceX), g.reg()
			} else {
				j.Op, j.Imm = asm.JumpOpCode(class, op, asm.SourceK), int32(g.value())
			}
			if g.n(8) == 0 {
				j = asm.Instruction{Op: asm.OpJa}
			}
			it.insns = []asm.Instruction{j}
			it.target = i + 1 + g.n(n-i) // an item after this one, or the end
		case k == 18 && fn+1 < nfn:
			it.insns = []asm.Instruction{{Op: asm.OpCall, Src: asm.PseudoCall}}
			it.callFn = fn + 1 + g.n(nfn-fn-1)
		default: // a helper, by id or through callx
			id := idSum
			if g.n(3) == 0 {
				id = idUnwind
			}
			if g.n(2) == 0 {
				r := asm.Register(g.n(10))
				it.insns = []asm.Instruction{{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceK), Dst: r, Imm: int32(id)}, {Op: asm.OpCallX, Dst: r}}
			} else {
				it.insns = []asm.Instruction{{Op: asm.OpCall, Imm: int32(id)}}
			}
			it.insns = append(it.insns, g.reinit()...)
		}
		items = append(items, it)
	}
	return items
}

// program: a main function and up to two subprograms. Each function
// initializes all of its stack (main also every register), runs a body of
// n random items with forward jumps only, then returns r0 = xor of all
// registers and of 8 stack words.
func (g *gen) program(n int) []asm.Instruction {
	nfn := 1 + g.n(3)
	starts := make([]int, nfn)
	type fixup struct{ pc, fn int }
	var calls []fixup
	for fn := range nfn {
		starts[fn] = len(g.insns)
		if fn == 0 {
			for r := asm.R0; r <= asm.R9; r++ {
				pair := asm.LdImm64(r, g.value())
				g.emit(pair[0], pair[1])
			}
		}
		for off := -asm.StackSize; off < 0; off += 8 {
			g.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeMEM, asm.SizeDW), Dst: asm.R10, Src: asm.Register(g.n(10)), Off: int16(off)})
		}
		items := g.body(n, fn, nfn)
		pcs := make([]int, len(items)+1) // pc of each item, and of the end
		pc := len(g.insns)
		for i, it := range items {
			pcs[i] = pc
			pc += len(it.insns)
		}
		pcs[len(items)] = pc
		for i, it := range items {
			if it.target >= 0 {
				it.insns[0].Off = int16(pcs[it.target] - pcs[i] - 1)
			}
			if it.callFn >= 0 {
				calls = append(calls, fixup{pcs[i], it.callFn})
			}
			g.emit(it.insns...)
		}
		for range 8 { // fold part of the stack into r1..r8
			g.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassLDX, asm.ModeMEM, asm.SizeDW), Dst: asm.Register(1 + g.n(8)), Src: asm.R10, Off: int16(-8 * (1 + g.n(64)))})
		}
		for r := asm.R1; r <= asm.R9; r++ {
			g.emit(asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUXor, asm.SourceX), Dst: asm.R0, Src: r})
		}
		g.emit(asm.Instruction{Op: asm.OpExit})
	}
	for _, c := range calls {
		g.insns[c.pc].Imm = int32(starts[c.fn] - c.pc - 1)
	}
	return g.insns
}

// diff runs insns on both engines and reports any difference.
func diff(t *testing.T, insns []asm.Instruction) {
	t.Helper()
	results := make([]string, 2)
	for i, e := range []vm.Engine{vm.NewInterpreter(), native.New()} {
		p := &vm.Program{Name: "diff", Insns: insns, Helpers: diffHelpers}
		x, err := e.Compile(p)
		if err != nil {
			t.Fatalf("%s: compile: %v\n%s", e.Name(), err, listing(insns))
		}
		r0, err := x.Run(nil)
		x.Close()
		if err != nil {
			t.Fatalf("%s: run: %v\n%s", e.Name(), err, listing(insns))
		}
		results[i] = fmt.Sprintf("%#x", r0)
	}
	if results[0] != results[1] {
		t.Fatalf("interp r0 = %s, jit r0 = %s\n%s", results[0], results[1], listing(insns))
	}
}

func listing(insns []asm.Instruction) string {
	s := ""
	for pc, in := range insns {
		s += fmt.Sprintf("%4d: %#016x %+v\n", pc, in.Word(), in)
	}
	return s
}

func TestDifferentialInterpJIT(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	for seed := range n {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
		g := &gen{next: rng.Uint64}
		diff(t, g.program(20+seed%60))
	}
}

// FuzzDifferentialInterpJIT: go test -fuzz FuzzDifferentialInterpJIT ./vm/
func FuzzDifferentialInterpJIT(f *testing.F) {
	f.Add([]byte("seed"), uint8(30))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		i := 0
		g := &gen{next: func() uint64 {
			var w [8]byte
			for k := range w {
				if i < len(b) {
					w[k] = b[i]
				}
				i++
			}
			return binary.LittleEndian.Uint64(w[:]) ^ uint64(i)*0x9e3779b97f4a7c15
		}}
		diff(t, g.program(int(n)))
	})
}

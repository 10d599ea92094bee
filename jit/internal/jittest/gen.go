package jittest

import (
	"bytes"
	"math/rand/v2"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/jit/internal/ctest"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The generator writes random programs that need no verifier to be safe and
// deterministic on every engine:
//
//   - memory: the mem buffer (genMemSize bytes) through a base register B
//     (one of r6-r9, set from r1 in the main program and never written
//     again) plus an in-bounds offset, or through a temporary T = B + (S &
//     0xf0); the stack through r10 within the 64 bytes each function
//     initializes first. Atomic accesses are aligned.
//   - registers: between two generated items every register other than B
//     and r10 holds a scalar both engines agree on: pointer temporaries are
//     overwritten at once, r1-r5 are redefined after helper calls.
//   - control flow: forward jumps are structured (jump over a generated
//     sequence), loops count a locked register down from at most 4, calls
//     go to later functions only (acyclic, depth at most 4).
//
// Every exit of the main program folds all scalar registers into r0, so a
// wrong register anywhere shows in the result.

const genMemSize = 256

type genLabel int

type genRef struct {
	pc    int
	label genLabel
}

// genFunc builds one function with labels.
type genFunc struct {
	insns  []asm.Instruction
	labels []int
	refs   []genRef
}

func (f *genFunc) emit(ins ...asm.Instruction) { f.insns = append(f.insns, ins...) }
func (f *genFunc) newLabel() genLabel {
	f.labels = append(f.labels, -1)
	return genLabel(len(f.labels) - 1)
}
func (f *genFunc) bind(l genLabel) { f.labels[l] = len(f.insns) }

// jumpTo emits ins with its offset (Off, or Imm for gotol) resolved to l later.
func (f *genFunc) jumpTo(ins asm.Instruction, l genLabel) {
	f.refs = append(f.refs, genRef{pc: len(f.insns), label: l})
	f.emit(ins)
}

func (f *genFunc) resolve() {
	for _, r := range f.refs {
		off := f.labels[r.label] - r.pc - 1
		if f.insns[r.pc].Op == asm.OpJa32 {
			f.insns[r.pc].Imm = int32(off)
		} else {
			f.insns[r.pc].Off = int16(off)
		}
	}
}

type gen struct {
	r      *rand.Rand
	base   asm.Register
	locked [asm.NumRegisters]bool
	nfuncs int
	fn     int
	f      *genFunc
	callx  bool // emit callx
	items  int  // items left in the current function
}

// GenProgram returns a random program (size: about how many items the main
// function gets) and a random initial mem buffer.
func GenProgram(seed uint64, size int) (*vm.Program, []byte) {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	g.base = asm.R6 + asm.Register(g.r.IntN(4))
	g.nfuncs = 1 + g.r.IntN(4)
	g.callx = g.r.IntN(4) == 0
	funcs := make([][]asm.Instruction, g.nfuncs)
	for i := range funcs {
		g.fn = i
		n := size
		if i > 0 {
			n = 5 + g.r.IntN(size/3+1)
		}
		funcs[i] = g.function(n)
	}
	// Lay the functions out and resolve "call local" (Imm holds the
	// callee's index until now).
	start := make([]int, g.nfuncs)
	var insns []asm.Instruction
	for i, f := range funcs {
		start[i] = len(insns)
		insns = append(insns, f...)
	}
	for i := range g.nfuncs {
		for pc := start[i]; pc < start[i]+len(funcs[i]); pc++ {
			if ins := &insns[pc]; ins.Op == asm.OpCall && ins.Src == asm.PseudoCall {
				ins.Imm = int32(start[ins.Imm] - pc - 1)
			}
		}
	}
	mem := make([]byte, genMemSize)
	for i := range mem {
		mem[i] = byte(g.r.Uint32())
	}
	return &vm.Program{Name: "gen", Insns: insns, Helpers: ctest.Table(), Maps: genMaps}, mem
}

// genArray backs the array map every generated program may use (value 0
// onwards through lddw map_value, the handle through lddw map); the
// differential harness resets it before each run (genArrayReset).
var genArray = make([]uint64, genArraySize/8)

const genArraySize = 128

var genMaps = []vm.MapRef{{Name: "arr", Handle: 0x5eed0000, Type: 2, KeySize: 4, ValueSize: 16, MaxEntries: genArraySize / 16,
	ArrayBase: uintptr(unsafe.Pointer(&genArray[0])), ArrayStride: 16}}

// genArrayReset fills genArray from mem (its last 128 bytes, reversed).
func genArrayReset(mem []byte) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&genArray[0])), genArraySize)
	for i := range b {
		b[i] = mem[len(mem)-1-i]
	}
}

// genArrayBytes returns a copy of genArray.
func genArrayBytes() []byte {
	return bytes.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&genArray[0])), genArraySize))
}

func (g *gen) function(n int) []asm.Instruction {
	g.f = &genFunc{}
	g.locked = [asm.NumRegisters]bool{}
	g.locked[asm.R10] = true
	g.locked[g.base] = true
	for k := int16(1); k <= 8; k++ {
		g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassST, asm.ModeMEM, asm.SizeDW), Dst: asm.R10, Off: -8 * k, Imm: g.imm()})
	}
	if g.fn == 0 {
		g.f.emit(mov64(g.base, asm.R1))
		for r := asm.R0; r <= asm.R9; r++ {
			if r != g.base {
				g.setConst(r)
			}
		}
	}
	exit := g.f.newLabel()
	g.items = n
	g.seq(n, 0, exit)
	g.f.bind(exit)
	g.exit()
	g.f.resolve()
	return g.f.insns
}

func mov64(dst, src asm.Register) asm.Instruction {
	return asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceX), Dst: dst, Src: src}
}

func movImm(dst asm.Register, imm int32) asm.Instruction {
	return asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMov, asm.SourceK), Dst: dst, Imm: imm}
}

// exit folds the registers into r0 (main program) and exits.
func (g *gen) exit() {
	if g.fn == 0 {
		for r := asm.R1; r <= asm.R9; r++ {
			if r == g.base {
				continue
			}
			g.f.emit(asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUMul, asm.SourceK), Dst: asm.R0, Imm: 0x01000193},
				asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUXor, asm.SourceX), Dst: asm.R0, Src: r})
		}
	}
	g.f.emit(asm.Instruction{Op: asm.OpExit})
}

func (g *gen) imm() int32 {
	switch g.r.IntN(12) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return -1
	case 3:
		return -0x80000000
	case 4:
		return 0x7fffffff
	case 5:
		return int32(g.r.IntN(70)) // shift counts and small values
	case 6:
		return -int32(g.r.IntN(300))
	default:
		return int32(g.r.Uint32())
	}
}

func (g *gen) imm64() uint64 {
	switch g.r.IntN(8) {
	case 0:
		return 1 << 63
	case 1:
		return 0xffffffff
	case 2:
		return 0x80000000
	case 3:
		return uint64(int64(g.imm()))
	default:
		return g.r.Uint64()
	}
}

func (g *gen) setConst(r asm.Register) {
	if g.r.IntN(16) == 0 {
		g.f.emit(asm.Instruction{Op: asm.OpLdImm64, Dst: r, Src: asm.PseudoMapFD}, asm.Instruction{}) // the handle: a constant
		return
	}
	if g.r.IntN(3) == 0 {
		p := asm.LdImm64(r, g.imm64())
		g.f.emit(p[0], p[1])
		return
	}
	g.f.emit(movImm(r, g.imm()))
}

// writable picks a register generated code may write.
func (g *gen) writable() asm.Register {
	for {
		r := asm.Register(g.r.IntN(10))
		if !g.locked[r] {
			return r
		}
	}
}

// readable picks a register holding a scalar.
func (g *gen) readable() asm.Register {
	for {
		r := asm.Register(g.r.IntN(10))
		if r != g.base {
			return r
		}
	}
}

// seq generates n items; forward jumps may target "out".
func (g *gen) seq(n, depth int, out genLabel) {
	for range n {
		g.item(depth, out)
	}
}

func (g *gen) item(depth int, out genLabel) {
	switch k := g.r.IntN(100); {
	case k < 40:
		g.alu()
	case k < 55:
		g.memAccess(false)
	case k < 62:
		g.memAccess(true)
	case k < 64:
		g.dynAccess()
	case k < 66:
		g.mapAccess()
	case k < 74:
		g.atomic()
	case k < 83 && depth < 3:
		g.jumpOver(depth, out)
	case k < 86 && depth < 2:
		g.loop(depth)
	case k < 91:
		g.helperCall()
	case k < 93 && g.callx:
		g.callxCall()
	case k < 98 && g.fn < g.nfuncs-1:
		g.f.emit(asm.Instruction{Op: asm.OpCall, Src: asm.PseudoCall, Imm: int32(g.fn + 1 + g.r.IntN(g.nfuncs-g.fn-1))})
	case k < 99:
		g.exit()
	default:
		g.alu()
	}
}

var genALUOps = []asm.ALUOp{asm.ALUAdd, asm.ALUSub, asm.ALUMul, asm.ALUDiv, asm.ALUOr, asm.ALUAnd,
	asm.ALULsh, asm.ALURsh, asm.ALUNeg, asm.ALUMod, asm.ALUXor, asm.ALUMov, asm.ALUArsh, asm.ALUEnd}

func (g *gen) alu() {
	cls := asm.ClassALU64
	if g.r.IntN(2) == 0 {
		cls = asm.ClassALU
	}
	op := genALUOps[g.r.IntN(len(genALUOps))]
	dst := g.writable()
	ins := asm.Instruction{Dst: dst}
	x := g.r.IntN(2) == 0
	switch op {
	case asm.ALUNeg:
		x = false
	case asm.ALUEnd:
		ins.Imm = []int32{16, 32, 64}[g.r.IntN(3)]
		x = cls == asm.ClassALU && x
		ins.Op = asm.ALUOpCode(cls, op, asm.SourceK)
		if x {
			ins.Op = asm.ALUOpCode(cls, op, asm.SourceX)
		}
		g.f.emit(ins)
		return
	case asm.ALUDiv, asm.ALUMod:
		ins.Off = int16(g.r.IntN(2))
	case asm.ALUMov:
		if x && g.r.IntN(3) == 0 {
			offs := []int16{8, 16, 32}
			if cls == asm.ClassALU {
				offs = offs[:2]
			}
			ins.Off = offs[g.r.IntN(len(offs))]
		}
	}
	src := asm.SourceK
	if x {
		src = asm.SourceX
		ins.Src = g.readable()
	} else if op != asm.ALUNeg {
		ins.Imm = g.imm()
	}
	ins.Op = asm.ALUOpCode(cls, op, src)
	g.f.emit(ins)
}

var genSizes = []asm.Size{asm.SizeB, asm.SizeH, asm.SizeW, asm.SizeDW}

// memAccess loads or stores through B (mem buffer) or r10 (stack).
func (g *gen) memAccess(stack bool) {
	size := genSizes[g.r.IntN(4)]
	nb := size.Bytes()
	base := g.base
	off := int16(g.r.IntN(genMemSize - nb + 1))
	if stack {
		base = asm.R10
		off = -int16(nb + g.r.IntN(64-nb+1))
	}
	g.access(base, off, size)
}

// access emits a random load or store of size at [base+off].
func (g *gen) access(base asm.Register, off int16, size asm.Size) {
	switch g.r.IntN(4) {
	case 0:
		mode := asm.ModeMEM
		if size != asm.SizeDW && g.r.IntN(2) == 0 {
			mode = asm.ModeMEMSX
		}
		g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassLDX, mode, size), Dst: g.writable(), Src: base, Off: off})
	case 1:
		g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassLDX, asm.ModeMEM, size), Dst: g.writable(), Src: base, Off: off})
	case 2:
		g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassST, asm.ModeMEM, size), Dst: base, Off: off, Imm: g.imm()})
	default:
		g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeMEM, size), Dst: base, Src: g.readable(), Off: off})
	}
}

// dynAccess computes T = B + (S & 0xf0) and accesses [T+off], then makes T
// a scalar again.
func (g *gen) dynAccess() {
	t := g.writable()
	s := g.readable()
	g.f.emit(mov64(t, s),
		asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUAnd, asm.SourceK), Dst: t, Imm: 0xf0},
		asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUAdd, asm.SourceX), Dst: t, Src: g.base})
	size := genSizes[g.r.IntN(4)]
	off := int16(g.r.IntN(16/size.Bytes())) * int16(size.Bytes())
	g.accessVia(t, size, off)
}

// mapAccess loads T = &value(0)+off0 with lddw map_value and accesses
// [T+off] inside the array, then makes T a scalar again.
func (g *gen) mapAccess() {
	t := g.writable()
	size := genSizes[g.r.IntN(4)]
	nb := int32(size.Bytes())
	off0 := 8 * int32(g.r.IntN(genArraySize/8))
	g.f.emit(asm.Instruction{Op: asm.OpLdImm64, Dst: t, Src: asm.PseudoMapValue}, asm.Instruction{Imm: off0})
	off := int16((int32(g.r.IntN(int(genArraySize-off0-nb+1))) / nb) * nb) // aligned, in bounds
	g.accessVia(t, size, off)
}

// accessVia loads, stores or atomically updates [t+off] (size bytes; atomics
// only for words and double words), then makes the pointer t a scalar
// again. A store must not store the pointer itself; a load may overwrite t.
func (g *gen) accessVia(t asm.Register, size asm.Size, off int16) {
	if (size == asm.SizeW || size == asm.SizeDW) && g.r.IntN(3) == 0 {
		g.atomicAt(t, off, size == asm.SizeDW, t)
	} else {
		switch g.r.IntN(3) {
		case 0:
			g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassLDX, asm.ModeMEM, size), Dst: g.writable(), Src: t, Off: off})
		case 1:
			g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassST, asm.ModeMEM, size), Dst: t, Off: off, Imm: g.imm()})
		default:
			src := g.readable()
			for src == t {
				src = g.readable()
			}
			g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeMEM, size), Dst: t, Src: src, Off: off})
		}
	}
	g.setConst(t)
}

var genAtomics = []int32{asm.AtomicAdd, asm.AtomicOr, asm.AtomicAnd, asm.AtomicXor,
	asm.AtomicAdd | asm.AtomicFetch, asm.AtomicOr | asm.AtomicFetch, asm.AtomicAnd | asm.AtomicFetch,
	asm.AtomicXor | asm.AtomicFetch, asm.AtomicXchg, asm.AtomicCmpXchg}

func (g *gen) atomic() {
	w := g.r.IntN(2) == 0
	n := int16(4)
	if w {
		n = 8
	}
	if g.r.IntN(3) == 0 {
		g.atomicAt(asm.R10, -n*int16(1+g.r.IntN(int(64/n))), w, 0xff)
		return
	}
	g.atomicAt(g.base, n*int16(g.r.IntN(int(genMemSize/n))), w, 0xff)
}

// atomicAt emits an atomic operation on [base+off]; avoid is a register
// that must not be the source (a pointer temporary), 0xff for none.
func (g *gen) atomicAt(base asm.Register, off int16, w bool, avoid asm.Register) {
	size := asm.SizeW
	if w {
		size = asm.SizeDW
	}
	op := genAtomics[g.r.IntN(len(genAtomics))]
	var src asm.Register
	for {
		if op&asm.AtomicFetch != 0 && op != asm.AtomicCmpXchg {
			src = g.writable() // the old value lands in src
		} else {
			src = g.readable()
		}
		if src != avoid && src != base {
			break
		}
	}
	if op == asm.AtomicCmpXchg && base == asm.R0 {
		op = asm.AtomicXor // cmpxchg would overwrite the pointer in r0 mid-way: fine natively, but keep T usable
	}
	if op == asm.AtomicCmpXchg && g.r.IntN(2) == 0 {
		// Make the comparison succeed: r0 = the current value, and for
		// 32-bit operations garbage in r0's upper half, which must not
		// survive (r0 gets the zero-extended old value).
		g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassLDX, asm.ModeMEM, size), Dst: asm.R0, Src: base, Off: off})
		if !w {
			t := g.writable()
			for t == asm.R0 || t == src || t == base || t == avoid {
				t = g.writable()
			}
			hi := asm.LdImm64(t, uint64(g.r.Uint32()|1)<<32)
			g.f.emit(hi[0], hi[1], asm.Instruction{Op: asm.ALUOpCode(asm.ClassALU64, asm.ALUOr, asm.SourceX), Dst: asm.R0, Src: t})
		}
	}
	g.f.emit(asm.Instruction{Op: asm.MemOpCode(asm.ClassSTX, asm.ModeAtomic, size), Dst: base, Src: src, Off: off, Imm: op})
}

var genJumps = []asm.JumpOp{asm.JumpEq, asm.JumpGT, asm.JumpGE, asm.JumpSet, asm.JumpNE, asm.JumpSGT,
	asm.JumpSGE, asm.JumpLT, asm.JumpLE, asm.JumpSLT, asm.JumpSLE}

// jumpOver emits a (conditional or unconditional) forward jump over a
// generated sequence, or to the function's exit.
func (g *gen) jumpOver(depth int, out genLabel) {
	l := g.f.newLabel()
	target := l
	if g.r.IntN(6) == 0 {
		target = out
	}
	switch g.r.IntN(10) {
	case 0:
		g.f.jumpTo(asm.Instruction{Op: asm.OpJa}, target)
	case 1:
		g.f.jumpTo(asm.Instruction{Op: asm.OpJa32}, target)
	default:
		cls := asm.ClassJMP
		if g.r.IntN(2) == 0 {
			cls = asm.ClassJMP32
		}
		op := genJumps[g.r.IntN(len(genJumps))]
		ins := asm.Instruction{Dst: g.readable()}
		if g.r.IntN(2) == 0 {
			ins.Op = asm.JumpOpCode(cls, op, asm.SourceX)
			ins.Src = g.readable()
		} else {
			ins.Op = asm.JumpOpCode(cls, op, asm.SourceK)
			ins.Imm = g.imm()
		}
		g.f.jumpTo(ins, target)
	}
	g.seq(1+g.r.IntN(6), depth+1, out)
	g.f.bind(l)
}

// loop counts a free register among r6-r9 down from 1-4 around a sequence.
func (g *gen) loop(depth int) {
	c := asm.R6 + asm.Register(g.r.IntN(4))
	if g.locked[c] {
		return
	}
	g.f.emit(movImm(c, int32(1+g.r.IntN(4))))
	top := g.f.newLabel()
	g.f.bind(top)
	g.locked[c] = true
	cont := g.f.newLabel()
	g.seq(1+g.r.IntN(5), depth+1, cont) // forward jumps inside stay inside
	g.f.bind(cont)
	g.locked[c] = false
	cls := asm.ClassALU64
	if g.r.IntN(2) == 0 {
		cls = asm.ClassALU
	}
	g.f.emit(asm.Instruction{Op: asm.ALUOpCode(cls, asm.ALUSub, asm.SourceK), Dst: c, Imm: 1})
	jcls := asm.ClassJMP
	if g.r.IntN(2) == 0 {
		jcls = asm.ClassJMP32
	}
	g.f.jumpTo(asm.Instruction{Op: asm.JumpOpCode(jcls, asm.JumpNE, asm.SourceK), Dst: c}, top)
}

var genHelpers = []helpers.ID{ctest.Mix, ctest.Sum, ctest.Unwind, ctest.Aligned}

func (g *gen) helperCall() {
	id := genHelpers[g.r.IntN(len(genHelpers))]
	if id == ctest.Unwind && g.r.IntN(4) != 0 {
		g.f.emit(movImm(asm.R1, 1+int32(g.r.IntN(100)))) // mostly keep going
	}
	g.f.emit(asm.Instruction{Op: asm.OpCall, Imm: int32(id)})
	g.afterHelper()
}

func (g *gen) afterHelper() {
	for r := asm.R1; r <= asm.R5; r++ {
		if !g.locked[r] {
			g.setConst(r)
		}
	}
}

func (g *gen) callxCall() {
	r := g.writable()
	id := int32(genHelpers[g.r.IntN(len(genHelpers))])
	switch g.r.IntN(20) {
	case 0:
		id = 3 // not in the table: both engines fault
	case 1:
		id = -1
	}
	if id == int32(ctest.Unwind) && r != asm.R1 && g.r.IntN(4) != 0 {
		g.f.emit(movImm(asm.R1, 7))
	}
	g.f.emit(movImm(r, id), asm.Instruction{Op: asm.OpCallX, Dst: r})
	g.afterHelper()
}

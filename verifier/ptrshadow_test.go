package verifier_test

import (
	"fmt"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/vm"
)

// shadow is a provenance oracle that runs alongside the interpreter (as
// its trace function). The interpreter alone only traps accesses outside
// every known region, so a pointer that walks from one map value into
// another looked-up value, or from one stack frame into its caller's, is
// not caught. shadow tags every register and every spilled 8-byte stack
// word with the object its value was derived from (the context, a stack
// frame, a looked-up map value, a ring buffer record, a map handle) and
// requires of every run:
//
//   - a load or store goes through a register tagged with an object that
//     is still live (a record not yet submitted or discarded, a frame not
//     yet returned from), entirely inside that object, and stores only to
//     writable objects;
//   - a register is read only after it was written on this path, a stack
//     byte only after it was stored to, and no part of a spilled pointer
//     is read by a narrower load;
//   - pointers never leave: not in r0 at exit, not stored outside the
//     stack, not in memory or arguments a helper reads and publishes
//     (map_update values, ringbuf_output data, printk arguments);
//   - every reserved record is released exactly once, and only with its
//     own start address.
//
// Numbers derived from pointers (differences, masks) carry no tag: adding
// one to a pointer keeps that pointer's object, so if the number was the
// distance to another object, the access is outside and caught.
type shadow struct {
	insns  []asm.Instruction
	refs   []vm.MapRef
	protos vm.HelperTable
	ctx    [2]uint64 // start, size

	objs   []sobj
	reg    [11]int // index into objs + 1; 0: a number
	init   [11]bool
	mem    map[uint64]int // spilled pointer tags by address
	frames []sframe
	depth  int
	// what the previous instruction left pending
	pendHelper helpers.ID
	pendR1     uint64
	pendR2     uint64
	pendCall   bool
	fail       error
	curStack   []byte // the current frame's stack, during trace
	curR10     uint64
}

type sobj struct {
	start, end uint64
	name       string
	readOnly   bool
	dead       bool
	ring       bool
	handle     bool
	stack      bool
}

type sframe struct {
	obj    int // the frame's stack object
	r10    uint64
	init   [asm.StackSize]bool
	saved  [4]int // r6-r9 tags of the caller
	savedI [4]bool
	r0     int  // r0 tag at the callee's exit
	r0I    bool // whether r0 was set at the callee's exit (a void function leaves it unset)
}

func newShadow(insns []asm.Instruction, refs []vm.MapRef, protos vm.HelperTable) *shadow {
	return &shadow{insns: insns, refs: refs, protos: protos}
}

// reset prepares a run on a context of size bytes at ctx.
func (s *shadow) reset(ctx, size uint64) {
	s.ctx = [2]uint64{ctx, size}
	s.objs = s.objs[:0]
	s.reg = [11]int{}
	s.init = [11]bool{}
	s.mem = map[uint64]int{}
	s.frames = s.frames[:0]
	s.depth = -1
	s.pendHelper, s.pendCall = 0, false
	s.fail = nil
}

func (s *shadow) newObj(o sobj) int {
	s.objs = append(s.objs, o)
	return len(s.objs)
}

func (s *shadow) failf(pc int, f string, args ...any) {
	if s.fail == nil {
		text, _ := asm.FormatAt(s.insns, pc)
		s.fail = fmt.Errorf("pc %d (%s): %s", pc, text, fmt.Sprintf(f, args...))
	}
}

func (s *shadow) pushFrame(r10 uint64) {
	o := s.newObj(sobj{start: r10 - asm.StackSize, end: r10, name: fmt.Sprintf("stack of frame %d", len(s.frames)), stack: true})
	s.frames = append(s.frames, sframe{obj: o, r10: r10})
	s.reg[10], s.init[10] = o, true
}

func (s *shadow) mapByHandle(h uint64) *vm.MapRef {
	for i := range s.refs {
		if uint64(s.refs[i].Handle) == h {
			return &s.refs[i]
		}
	}
	return nil
}

// trace is the interpreter's trace function.
func (s *shadow) trace(ts *vm.TraceState) {
	if s.fail != nil {
		return
	}
	r := ts.Regs
	s.curStack, s.curR10 = ts.Stack, r[10]
	if s.depth < 0 {
		// entry: r1 = context, r10 = stack
		s.depth = 0
		s.reg[1] = s.newObj(sobj{start: s.ctx[0], end: s.ctx[0] + s.ctx[1], name: "context"})
		s.init[1] = true
		s.pushFrame(r[10])
	}
	s.settle(ts)
	s.step(ts.PC, r)
}

// settle applies what the previous instruction left pending: a helper's
// result, a call into a subprogram, a return from one.
func (s *shadow) settle(ts *vm.TraceState) {
	r := ts.Regs
	if s.pendHelper != 0 {
		id := s.pendHelper
		s.pendHelper = 0
		s.reg[0], s.init[0] = 0, true
		for i := 1; i <= 5; i++ {
			s.reg[i], s.init[i] = 0, false
		}
		switch id {
		case helpers.MapLookupElem:
			if m := s.mapByHandle(s.pendR1); m != nil && r[0] != 0 {
				s.reg[0] = s.newObj(sobj{start: r[0], end: r[0] + uint64(m.ValueSize), name: "value of map " + m.Name, readOnly: m.ReadOnly})
			}
		case helpers.RingbufReserve:
			if r[0] != 0 {
				s.reg[0] = s.newObj(sobj{start: r[0], end: r[0] + s.pendR2, name: "ringbuf record", ring: true})
			}
		}
	}
	switch {
	case ts.Depth > s.depth:
		// entered a subprogram: r1-r5 are passed, r6-r9 are the callee's
		// to write (the interpreter shows the caller's values)
		f := &s.frames[len(s.frames)-1]
		copy(f.saved[:], s.reg[6:10])
		copy(f.savedI[:], s.init[6:10])
		for i := 6; i <= 9; i++ {
			s.reg[i], s.init[i] = 0, false
		}
		s.reg[0], s.init[0] = 0, false
		s.pushFrame(r[10])
		s.depth = ts.Depth
	case ts.Depth < s.depth:
		callee := s.frames[len(s.frames)-1]
		s.objs[callee.obj-1].dead = true
		s.frames = s.frames[:len(s.frames)-1]
		f := &s.frames[len(s.frames)-1]
		copy(s.reg[6:10], f.saved[:])
		copy(s.init[6:10], f.savedI[:])
		for i := 1; i <= 5; i++ {
			s.reg[i], s.init[i] = 0, false
		}
		s.reg[0], s.init[0] = callee.r0, callee.r0I
		s.reg[10] = f.obj
		s.depth = ts.Depth
		// spills in the dead frame are gone
		for a := range s.mem {
			if a >= callee.r10-asm.StackSize && a < callee.r10 {
				delete(s.mem, a)
			}
		}
	}
}

func (s *shadow) read(pc int, reg asm.Register) {
	if !s.init[reg] {
		s.failf(pc, "reads %v, which is not initialized on this path", reg)
	}
}

// frameOf returns the live frame whose stack holds addr, or nil.
func (s *shadow) frameOf(addr uint64) *sframe {
	for i := range s.frames {
		f := &s.frames[i]
		if addr >= f.r10-asm.StackSize && addr < f.r10 {
			return f
		}
	}
	return nil
}

// check validates an access of size bytes at addr through reg (tag t).
func (s *shadow) check(pc int, what string, t int, addr, size uint64, write bool) {
	if t == 0 {
		s.failf(pc, "%s of %d bytes at %#x through a number: an address built without a pointer", what, size, addr)
		return
	}
	o := &s.objs[t-1]
	switch {
	case o.dead:
		s.failf(pc, "%s of %d bytes through a pointer to %s, which was released", what, size, o.name)
	case o.handle:
		s.failf(pc, "%s through a map handle", what)
	case addr < o.start || addr+size > o.end || addr+size < addr:
		s.failf(pc, "%s of %d bytes at offset %d of %s [0, %d): outside the object the pointer came from", what, size, int64(addr-o.start), o.name, o.end-o.start)
	case write && o.readOnly:
		s.failf(pc, "%s to read-only %s", what, o.name)
	}
}

// stackBytes checks that [addr, addr+size) of the stack was written, when
// it is on a stack, and that no spilled pointer is read by a narrower or
// misaligned load.
func (s *shadow) readMem(pc int, what string, addr, size uint64, wholeSpill bool) {
	if f := s.frameOf(addr); f != nil {
		base := f.r10 - asm.StackSize
		for b := addr; b < addr+size && b < f.r10; b++ {
			if !f.init[b-base] {
				s.failf(pc, "%s reads stack byte fp%+d, which was never written", what, int64(b)-int64(f.r10))
				return
			}
		}
	}
	for a, t := range s.mem {
		if t != 0 && a < addr+size && addr < a+8 && !(wholeSpill && a == addr && size == 8) {
			s.failf(pc, "%s reads part of a spilled pointer (to %s) as a number", what, s.objs[t-1].name)
			return
		}
	}
}

// wrote records a store of size bytes at addr of a value tagged t.
func (s *shadow) wrote(addr, size uint64, t int) {
	for a := range s.mem {
		if a < addr+size && addr < a+8 {
			delete(s.mem, a)
		}
	}
	if t != 0 {
		s.mem[addr] = t
	}
	if f := s.frameOf(addr); f != nil {
		base := f.r10 - asm.StackSize
		for b := addr; b < addr+size && b < f.r10; b++ {
			f.init[b-base] = true
		}
	}
}

func (s *shadow) step(pc int, r *[asm.NumRegisters]uint64) {
	ins := s.insns[pc]
	switch c := ins.Op.Class(); c {
	case asm.ClassALU, asm.ClassALU64:
		s.alu(pc, ins, c == asm.ClassALU64)
	case asm.ClassLD:
		s.reg[ins.Dst], s.init[ins.Dst] = 0, true
		switch ins.Src {
		case asm.PseudoMapFD:
			m := s.refs[ins.Imm]
			s.reg[ins.Dst] = s.newObj(sobj{start: uint64(m.Handle), end: uint64(m.Handle), name: "map " + m.Name, handle: true})
		case asm.PseudoMapValue:
			m := s.refs[ins.Imm]
			s.reg[ins.Dst] = s.newObj(sobj{start: uint64(m.ArrayBase), end: uint64(m.ArrayBase) + uint64(m.ValueSize), name: "value 0 of map " + m.Name, readOnly: m.ReadOnly})
		}
	case asm.ClassLDX:
		s.read(pc, ins.Src)
		size := uint64(ins.Op.Size().Bytes())
		addr := r[ins.Src] + uint64(int64(ins.Off))
		s.check(pc, "load", s.reg[ins.Src], addr, size, false)
		s.readMem(pc, "load", addr, size, true)
		t := 0
		if size == 8 {
			t = s.mem[addr]
		}
		s.reg[ins.Dst], s.init[ins.Dst] = t, true
	case asm.ClassST, asm.ClassSTX:
		s.read(pc, ins.Dst)
		size := uint64(ins.Op.Size().Bytes())
		addr := r[ins.Dst] + uint64(int64(ins.Off))
		t := 0
		if c == asm.ClassSTX {
			s.read(pc, ins.Src)
			t = s.reg[ins.Src]
		}
		s.check(pc, "store", s.reg[ins.Dst], addr, size, true)
		if ins.Op.Mode() == asm.ModeAtomic {
			s.readMem(pc, "atomic", addr, size, false)
			if t != 0 {
				s.failf(pc, "a pointer (to %s) is an atomic operand", s.objs[t-1].name)
			}
			s.wrote(addr, size, 0)
			if ins.Imm&asm.AtomicFetch != 0 {
				s.reg[ins.Src] = 0
			}
			if ins.Imm == asm.AtomicCmpXchg {
				s.reg[0], s.init[0] = 0, true
			}
			return
		}
		if d := s.reg[ins.Dst]; t != 0 && d != 0 {
			switch o := s.objs[d-1]; {
			case !o.stack:
				s.failf(pc, "a pointer (to %s) is stored into %s, where it leaves the program", s.objs[t-1].name, o.name)
			case size != 8:
				s.failf(pc, "%d bytes of a pointer (to %s) are stored: the rest of it is lost, the stored part is a number", size, s.objs[t-1].name)
			}
		}
		s.wrote(addr, size, t)
	default:
		s.jump(pc, ins, r)
	}
}

func (s *shadow) alu(pc int, ins asm.Instruction, is64 bool) {
	op := ins.Op.ALUOp()
	x := ins.Op.Source() == asm.SourceX && op != asm.ALUNeg && op != asm.ALUEnd
	if x {
		s.read(pc, ins.Src)
	}
	if op != asm.ALUMov {
		s.read(pc, ins.Dst)
	}
	td, ts := s.reg[ins.Dst], 0
	if x {
		ts = s.reg[ins.Src]
	}
	t := 0
	switch {
	case !is64:
	case op == asm.ALUMov && x && ins.Off == 0:
		t = ts
	case op == asm.ALUAdd && (td == 0) != (ts == 0):
		t = td + ts
	case op == asm.ALUSub && td != 0 && ts == 0:
		t = td
	}
	s.reg[ins.Dst], s.init[ins.Dst] = t, true
}

func (s *shadow) jump(pc int, ins asm.Instruction, r *[asm.NumRegisters]uint64) {
	switch ins.Op.JumpOp() {
	case asm.JumpA:
		return
	case asm.JumpExit:
		if s.depth > 0 {
			// only the program's own exit reads r0: a function's
			// result is read, if ever, by its caller
			s.frames[len(s.frames)-1].r0 = s.reg[0]
			s.frames[len(s.frames)-1].r0I = s.init[0]
			if t := s.reg[0]; t == s.frames[len(s.frames)-1].obj {
				s.failf(pc, "returns a pointer to its own stack frame")
			}
			return
		}
		s.read(pc, asm.R0)
		if t := s.reg[0]; t != 0 {
			s.failf(pc, "the program returns a pointer (to %s)", s.objs[t-1].name)
		}
		for i := range s.objs {
			if o := &s.objs[i]; o.ring && !o.dead {
				s.failf(pc, "a ringbuf record is still reserved at exit")
			}
		}
		return
	case asm.JumpCall:
		if ins.Src == asm.PseudoCall {
			return // settled when the callee's first instruction runs
		}
		s.helper(pc, helpers.ID(ins.Imm), r)
		return
	}
	s.read(pc, ins.Dst)
	if ins.Op.Source() == asm.SourceX {
		s.read(pc, ins.Src)
	}
}

// helper checks a helper call's arguments and leaves its result pending.
func (s *shadow) helper(pc int, id helpers.ID, r *[asm.NumRegisters]uint64) {
	h, ok := s.protos[id]
	if !ok || h.Proto == nil {
		s.failf(pc, "helper %d is unknown", id)
		return
	}
	p := h.Proto
	var m *vm.MapRef
	nargs := 5
	if id == helpers.TracePrintk {
		nargs = 2 + s.printkArgs(s.reg[1], r[1], r[2])
	}
	for i := 0; i < nargs; i++ {
		a := p.Args[i]
		reg := asm.R1 + asm.Register(i)
		if a == helpers.ArgNone {
			continue
		}
		s.read(pc, reg)
		t := s.reg[reg]
		switch a {
		case helpers.ArgAnything, helpers.ArgScalar, helpers.ArgConstSize:
			if t != 0 {
				s.failf(pc, "argument %d of %s is a pointer (to %s)", i+1, p.Name, s.objs[t-1].name)
			}
		case helpers.ArgConstMapPtr:
			if t == 0 || !s.objs[t-1].handle {
				s.failf(pc, "argument %d of %s is not a map", i+1, p.Name)
			}
			m = s.mapByHandle(r[reg])
		case helpers.ArgPtrToMapKey, helpers.ArgPtrToMapValue:
			if m == nil {
				return
			}
			n := uint64(m.KeySize)
			if a == helpers.ArgPtrToMapValue {
				n = uint64(m.ValueSize)
			}
			s.check(pc, p.Name+" reads argument", t, r[reg], n, false)
			s.readMem(pc, p.Name, r[reg], n, false)
		case helpers.ArgPtrToMem:
			n := r[reg+1]
			s.check(pc, p.Name+" reads argument", t, r[reg], n, false)
			s.readMem(pc, p.Name, r[reg], n, false)
		case helpers.ArgPtrToAllocMem:
			if t == 0 || !s.objs[t-1].ring || s.objs[t-1].dead || s.objs[t-1].start != r[reg] {
				s.failf(pc, "argument %d of %s is not the start of a live ringbuf record", i+1, p.Name)
				return
			}
			s.objs[t-1].dead = true
		}
	}
	s.pendHelper, s.pendR1, s.pendR2 = id, r[1], r[2]
}

// printkArgs counts the arguments a bpf_printk format of n bytes at p
// (through a register tagged t) consumes, at most 3; 3 when the format is
// not inside a live object.
func (s *shadow) printkArgs(t int, p, n uint64) int {
	var b []byte
	low := s.curR10 - uint64(len(s.curStack))
	switch {
	case n == 0 || p+n < p:
		return 3
	case p >= low && p+n <= s.curR10:
		b = s.curStack[p-low : p-low+n]
	case t != 0 && !s.objs[t-1].dead && !s.objs[t-1].handle && !s.objs[t-1].stack &&
		p >= s.objs[t-1].start && p+n <= s.objs[t-1].end:
		// a map value or the context: memory that lives through the run
		b = unsafe.Slice((*byte)(addrPointer(p)), n)
	default:
		return 3
	}
	if b[n-1] != 0 {
		return 0 // refused before any argument is read
	}
	used := 0
	for i := 0; i < len(b) && b[i] != 0 && used < 3; i++ {
		if b[i] != '%' {
			continue
		}
		i++
		if i < len(b) && b[i] == '%' {
			continue
		}
		used++
	}
	return used
}

// addrPointer turns an address the program holds into a pointer for one
// read, without a uintptr conversion vet would flag: the memory is a map
// value (C memory) or the context buffer, live for the whole run.
func addrPointer(a uint64) unsafe.Pointer {
	p := uintptr(a)
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

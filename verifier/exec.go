package verifier

import (
	"github.com/ncclbpf/ncclbpf/loader"
	"math"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
)

// step executes the instruction at pc abstractly on st. It returns the
// next pc (-1 when the path ends) and, when a conditional jump can go both
// ways, a second state to explore from forkPC.
func (ck *checker) step(st *state, pc int) (next int, fork *state, forkPC int, e *Error) {
	ins := ck.insns[pc]
	switch c := ins.Op.Class(); c {
	case asm.ClassALU, asm.ClassALU64:
		return pc + 1, nil, 0, ck.alu(st, pc, ins)
	case asm.ClassLD:
		return pc + 2, nil, 0, ck.ldImm64(st, pc, ins)
	case asm.ClassLDX:
		return pc + 1, nil, 0, ck.load(st, pc, ins)
	case asm.ClassST, asm.ClassSTX:
		return pc + 1, nil, 0, ck.store(st, pc, ins)
	default:
		switch ins.Op.JumpOp() {
		case asm.JumpA:
			t, _ := ck.jumpTarget(pc)
			return t, nil, 0, nil
		case asm.JumpCall:
			if ins.Src == asm.PseudoCall {
				return ck.callSub(st, pc, ins), nil, 0, nil
			}
			return pc + 1, nil, 0, ck.callHelper(st, pc, ins)
		case asm.JumpExit:
			next, e := ck.exit(st, pc)
			return next, nil, 0, e
		}
		return ck.branch(st, pc, ins)
	}
}

// read returns the value of register r, which must be initialized.
func (ck *checker) read(st *state, pc int, r asm.Register) (value, *Error) {
	v := st.top().regs[r]
	switch v.k {
	case kUninit:
		return v, ck.errorf(UninitRegister, pc, "%v is read but not initialized on this path (never written, or clobbered by a call)", r)
	case kReleased:
		return v, ck.errorf(UseAfterRelease, pc, "%v held a ringbuf record that was submitted or discarded at %s; the record belongs to its reader now and may not be used", r, ck.where(int(v.idx)))
	}
	return v, nil
}

func (ck *checker) alu(st *state, pc int, ins asm.Instruction) *Error {
	f := st.top()
	is64 := ins.Op.Class() == asm.ClassALU64
	op := ins.Op.ALUOp()
	regSrc := ins.Op.Source() == asm.SourceX && op != asm.ALUEnd && op != asm.ALUNeg
	var src value
	if regSrc {
		var e *Error
		if src, e = ck.read(st, pc, ins.Src); e != nil {
			return e
		}
	} else if is64 {
		src = constVal(uint64(int64(ins.Imm)))
	} else {
		src = constVal(uint64(uint32(ins.Imm)))
	}
	if op == asm.ALUMov {
		return ck.mov(st, pc, ins, src, is64)
	}
	dst, e := ck.read(st, pc, ins.Dst)
	if e != nil {
		return e
	}
	if op == asm.ALUNeg || op == asm.ALUEnd {
		if dst.isPtr() {
			return ck.errorf(BadPointerArith, pc, "%v holds a %s; negation and byte swaps apply to numbers only", ins.Dst, dst.describe(ck))
		}
		f.regs[ins.Dst] = value{k: kScalar, s: unaryOp(ins, dst.s, is64)}
		return nil
	}
	if dst.isPtr() || src.isPtr() {
		v, e := ck.ptrArith(pc, ins, dst, src, is64)
		if e != nil {
			return e
		}
		f.regs[ins.Dst] = v
		return nil
	}
	signed := ins.Off == 1
	if op == asm.ALUDiv || op == asm.ALUMod {
		d := src.s
		if !is64 {
			d = d.trunc32()
		}
		if d.umin == 0 {
			ck.warnDiv(pc, ins, d)
		}
	}
	if is64 {
		f.regs[ins.Dst] = value{k: kScalar, s: scalarOp(op, dst.s, src.s, signed)}
		return nil
	}
	v := value{k: kScalar, s: scalarOp32(op, dst.s, src.s, signed)}
	if (op == asm.ALUAdd || op == asm.ALUSub) && src.s.isConst() && dst.id != 0 && !v.s.isConst() {
		// w3 += k on a linked value keeps the link: (B + delta + k) mod 2^32
		k := uint32(src.s.constVal())
		if op == asm.ALUSub {
			k = -k
		}
		v.id, v.rel, v.delta = dst.id, rel32, dst.delta+k
	}
	f.regs[ins.Dst] = v
	return nil
}

func (ck *checker) warnDiv(pc int, ins asm.Instruction, d Scalar) {
	if ck.warned == nil {
		ck.warned = map[int]bool{}
	}
	if ck.warned[pc] {
		return
	}
	ck.warned[pc] = true
	what := "the divisor is 0"
	if !d.isConst() {
		what = "the divisor " + ins.Src.String() + " may be 0 (" + d.String() + ")"
	}
	ck.warnings = append(ck.warnings, ck.errorf(DivByZero, pc, "%s; eBPF then gives 0 for a division and leaves the dividend for a modulo", what))
}

func (ck *checker) mov(st *state, pc int, ins asm.Instruction, src value, is64 bool) *Error {
	f := st.top()
	if ins.Op.Source() == asm.SourceK {
		f.regs[ins.Dst] = src
		return nil
	}
	if src.isPtr() && (!is64 || ins.Off != 0) {
		return ck.errorf(BadPointerArith, pc, "%v holds a %s; a 32-bit or sign-extending move would truncate it", ins.Src, src.describe(ck))
	}
	switch {
	case ins.Off != 0:
		s := src.s
		switch ins.Off {
		case 8, 16:
			s = scalarOp(asm.ALUAnd, s, constScalar(uint64(1)<<ins.Off-1), false)
			if s.isConst() {
				s = constScalar(uint64(int64(s.constVal()<<(64-ins.Off)) >> (64 - ins.Off)))
			} else if s.umax < uint64(1)<<(ins.Off-1) {
				// sign bit clear: unchanged
			} else {
				s = sextScalar(int(ins.Off) / 8)
			}
		case 32:
			s = s.sext32()
		}
		if !is64 {
			s = s.trunc32()
		}
		f.regs[ins.Dst] = value{k: kScalar, s: s}
	case !is64:
		v := value{k: kScalar, s: src.s.trunc32()}
		if src.k == kScalar && !src.s.isConst() {
			// w3 = w2 links the copy to r2: the same number when r2
			// fits in 32 bits, its low half otherwise
			v.id, v.rel, v.delta = ck.linkID(f, ins.Src), src.rel, src.delta
			if !src.s.fits32() {
				v.rel, v.delta = rel32, 0
			}
		}
		f.regs[ins.Dst] = v
	default:
		if src.k == kScalar && !src.s.isConst() {
			src.id = ck.linkID(f, ins.Src)
		}
		f.regs[ins.Dst] = src
	}
	return nil
}

// linkID returns the copy id of the scalar in register r, giving it a new
// one if it has none.
func (ck *checker) linkID(f *frame, r asm.Register) uint32 {
	if f.regs[r].id == 0 {
		f.regs[r].id = ck.newID()
		f.regs[r].rel, f.regs[r].delta = relCopy, 0
	}
	return f.regs[r].id
}

// unaryOp computes neg and byte swaps.
func unaryOp(ins asm.Instruction, s Scalar, is64 bool) Scalar {
	if ins.Op.ALUOp() == asm.ALUNeg {
		if is64 {
			return scalarOp(asm.ALUSub, constScalar(0), s, false)
		}
		return scalarOp32(asm.ALUSub, constScalar(0), s, false)
	}
	w := int(ins.Imm)
	le := ins.Op.Class() == asm.ClassALU && ins.Op.Source() == asm.SourceK
	if w == 64 && le {
		return s
	}
	var mask uint64 = math.MaxUint64
	if w < 64 {
		mask = uint64(1)<<w - 1
	}
	if le {
		return scalarOp(asm.ALUAnd, s, constScalar(mask), false)
	}
	if s.isConst() {
		v := s.constVal()
		var r uint64
		for i := 0; i < w/8; i++ {
			r = r<<8 | (v>>(8*i))&0xff
		}
		return constScalar(r)
	}
	return widthScalar(w / 8)
}

// ptrArith allows pointer +/- scalar and the difference of two pointers
// into the same region.
func (ck *checker) ptrArith(pc int, ins asm.Instruction, dst, src value, is64 bool) (value, *Error) {
	op := ins.Op.ALUOp()
	for _, x := range []struct {
		v value
		r asm.Register
	}{{dst, ins.Dst}, {src, ins.Src}} {
		if x.v.isNullable() {
			return value{}, ck.errorf(NullablePointerArith, pc, "%v holds a %s: compare it with 0 before doing arithmetic on it", x.r, x.v.describe(ck))
		}
		if x.v.k == kMapHandle {
			return value{}, ck.errorf(BadPointerArith, pc, "%v holds a %s, which is not a memory address", x.r, x.v.describe(ck))
		}
	}
	if !is64 {
		return value{}, ck.errorf(BadPointerArith, pc, "32-bit arithmetic on a pointer (%v: %s)", ins.Dst, dst.describe(ck))
	}
	switch {
	case op == asm.ALUAdd && dst.isPtr() && !src.isPtr(), op == asm.ALUSub && dst.isPtr() && !src.isPtr():
		return ck.offsetPtr(pc, ins, dst, src.s, op)
	case op == asm.ALUAdd && src.isPtr() && !dst.isPtr():
		return ck.offsetPtr(pc, ins, src, dst.s, op)
	case op == asm.ALUSub && dst.isPtr() && src.isPtr():
		if sameRegion(dst, src) {
			return scalarVal(scalarOp(asm.ALUSub, dst.s, src.s, false)), nil
		}
		return value{}, ck.errorf(BadPointerArith, pc, "subtracting pointers into different regions (%s - %s)", dst.describe(ck), src.describe(ck))
	}
	return value{}, ck.errorf(BadPointerArith, pc, "only a number may be added to or subtracted from a pointer (%v: %s, operand: %s)", ins.Dst, dst.describe(ck), src.describe(ck))
}

func (ck *checker) offsetPtr(pc int, ins asm.Instruction, p value, n Scalar, op asm.ALUOp) (value, *Error) {
	p.s = scalarOp(op, p.s, n, false)
	if p.k == kCtx && !p.s.isConst() {
		return value{}, ck.errorf(BadPointerArith, pc, "the context pointer may only move by constants; the offset would be %s", p.s)
	}
	return p, nil
}

func (ck *checker) ldImm64(st *state, pc int, ins asm.Instruction) *Error {
	f := st.top()
	switch ins.Src {
	case asm.PseudoMapFD, asm.PseudoMapValue:
		m := ck.maps[ins.Imm]
		if !knownMapType(m.Type) {
			return ck.errorf(BadMapRef, pc, "map %s has type %d, which programs cannot use", ck.mapName(int(ins.Imm)), m.Type)
		}
		if ins.Src == asm.PseudoMapFD {
			f.regs[ins.Dst] = value{k: kMapHandle, idx: ins.Imm}
			return nil
		}
		if m.Type != MapTypeArray {
			return ck.errorf(BadMapRef, pc, "direct value access needs an array map; %s has type %d", ck.mapName(int(ins.Imm)), m.Type)
		}
		off := uint64(uint32(ck.insns[pc+1].Imm))
		f.regs[ins.Dst] = value{k: kMapValue, idx: ins.Imm, id: globalID | uint32(ins.Imm), s: constScalar(off)}
	default:
		v, _ := asm.Imm64(ck.insns, pc)
		f.regs[ins.Dst] = constVal(v)
	}
	return nil
}

// returnTo pops the callee's frame and continues the caller after its
// call instruction, with r0 holding the callee's result and r1-r5
// clobbered. It returns the pc after the call.
func returnTo(st *state, r0 value) int {
	n := len(st.frames)
	callsite := st.frames[n-1].callsite
	st.frames = st.frames[:n-1]
	caller := st.top()
	caller.regs[asm.R0] = r0
	for r := asm.R1; r <= asm.R5; r++ {
		caller.regs[r] = value{}
	}
	return callsite + 1
}

// globalID | map index is the id of pointers into a map's single value
// (global data): every such pointer points into the same object.
const globalID = 1 << 31

func knownMapType(t loader.MapType) bool {
	switch t {
	case MapTypeHash, MapTypeArray, MapTypePercpuHash, MapTypePercpuArray, MapTypeLRUHash,
		MapTypeLRUPercpuHash, MapTypeRingBuf:
		return true
	}
	return false
}

// callSub enters a BPF-to-BPF call: a new frame whose r1-r5 are the
// caller's and whose r10 is a fresh stack.
func (ck *checker) callSub(st *state, pc int, ins asm.Instruction) int {
	caller := st.top()
	var fr frame
	fr.callsite = pc
	if ck.facts != nil {
		fr.ctx = ck.facts.childCtx(caller.ctx, pc)
	}
	copy(fr.regs[asm.R1:asm.R6], caller.regs[asm.R1:asm.R6])
	fr.regs[asm.R10] = value{k: kStack, frame: uint8(len(st.frames)), s: constScalar(0)}
	st.frames = append(st.frames, fr)
	return pc + 1 + int(ins.Imm)
}

// exit returns from a subprogram, or ends the program: r0 must then be a
// number in the hook's return range and no ringbuf record may be pending.
// A subprogram's r0 may be uninitialized (a C function returning void):
// the caller's r0 is then uninitialized too, and reading it is refused
// there.
func (ck *checker) exit(st *state, pc int) (int, *Error) {
	n := len(st.frames)
	if n > 1 && st.top().regs[asm.R0].k == kUninit {
		return returnTo(st, value{}), nil
	}
	r0, e := ck.read(st, pc, asm.R0)
	if e != nil {
		return -1, e
	}
	if n > 1 {
		if r0.k == kStack && int(r0.frame) == n-1 {
			return -1, ck.errorf(PointerLeak, pc, "the function returns a pointer to its own stack (%s), which ends with it", r0.describe(ck))
		}
		return returnTo(st, r0), nil
	}
	if r0.k != kScalar {
		return -1, ck.errorf(PointerLeak, pc, "r0 holds a %s at exit; a program must return a number", r0.describe(ck))
	}
	ret := ck.hook.Return
	rv := r0.s
	if ret.IsCInt() {
		// a C int return: the host reads the low 32 bits of r0, signed
		rv = rv.sext32()
	}
	if rv.smin < ret.Min || rv.smax > ret.Max {
		return -1, ck.errorf(BadReturn, pc, "r0 may be %s at exit; hook %q returns values in [%d, %d]", rv, ck.hook.Name, ret.Min, ret.Max)
	}
	if len(st.refs) > 0 {
		var at []string
		for _, id := range st.refs {
			if rpc, ok := ck.refPC[id]; ok {
				at = append(at, ck.where(rpc))
			}
		}
		return -1, ck.errorf(UnreleasedRef, pc, "the program exits while %d ringbuf record(s) reserved with bpf_ringbuf_reserve (at %s) are neither submitted nor discarded on this path", len(st.refs), strings.Join(at, ", "))
	}
	return -1, nil
}

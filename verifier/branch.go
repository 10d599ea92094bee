package verifier

import (
	"math"

	"github.com/ncclbpf/ncclbpf/asm"
)

// branch handles a conditional jump: it decides the outcome when the
// operands allow only one, and otherwise forks, refining the operands'
// ranges on each side.
func (ck *checker) branch(st *state, pc int, ins asm.Instruction) (int, *state, int, *Error) {
	is32 := ins.Op.Class() == asm.ClassJMP32
	op := ins.Op.JumpOp()
	target, fall := pc+1+int(ins.Off), pc+1
	a, e := ck.read(st, pc, ins.Dst)
	if e != nil {
		return -1, nil, 0, e
	}
	var b value
	regSrc := ins.Op.Source() == asm.SourceX
	if regSrc {
		if b, e = ck.read(st, pc, ins.Src); e != nil {
			return -1, nil, 0, e
		}
	} else if is32 {
		b = constVal(uint64(uint32(ins.Imm)))
	} else {
		b = constVal(uint64(int64(ins.Imm)))
	}
	if a.isPtr() && b.isPtr() && sameRegion(a, b) && !is32 && op != asm.JumpSet {
		if !ck.inObject(a) || !ck.inObject(b) {
			return -1, nil, 0, ck.errorf(PointerCompare, pc, "%s is compared with %s, but an offset may leave the object: addresses compare as unsigned numbers and may wrap around, so only pointers inside their object (or just past its end) may be ordered; bound the offsets first", a.describe(ck), b.describe(ck))
		}
		return ck.regionBranch(st, pc, ins, a, b, target, fall)
	}
	if a.isPtr() || b.isPtr() {
		return ck.ptrBranch(st, pc, ins, a, b, target, fall)
	}
	var t, f [2]Scalar
	var okT, okF bool
	refineA, refineB := true, regSrc && ins.Src != ins.Dst
	if is32 {
		a32, b32 := a.s.trunc32(), b.s.trunc32()
		if a32.isConst() && b32.isConst() {
			if cmp32(op, uint32(a32.constVal()), uint32(b32.constVal())) {
				return target, nil, 0, nil
			}
			return fall, nil, 0, nil
		}
		sa, sb := a.s, b.s
		switch op {
		case asm.JumpSGT, asm.JumpSGE, asm.JumpSLT, asm.JumpSLE:
			if !regSrc {
				sb = constScalar(uint64(int64(ins.Imm)))
			}
			if a.s.umax > math.MaxInt32 || regSrc && b.s.umax > math.MaxInt32 {
				refineA, refineB = false, false
			}
		default:
			if !a.s.fits32() || !b.s.fits32() {
				refineA, refineB = false, false
			}
		}
		if refineA || refineB {
			t, f, okT, okF = refine(op, sa, sb)
		} else if op != asm.JumpSet {
			// the 64-bit value is not its own 32-bit view: refine the
			// view piece by piece (sign- or zero-extended values)
			t, f, okT, okF = refine32(op, a.s, b.s, !regSrc, int64(ins.Imm))
			refineA = true
		} else {
			okT, okF = true, true
		}
	} else {
		t, f, okT, okF = refine(op, a.s, b.s)
	}
	apply := func(s *state, v [2]Scalar) {
		if refineA {
			ck.setScalar(s, ins.Dst, v[0])
		}
		if refineB {
			ck.setScalar(s, ins.Src, v[1])
		}
	}
	return ck.take(st, pc, a, b, target, fall, t, f, okT, okF, apply)
}

// setScalar gives register r (and every copy linked to it) the range s,
// and bounds the values linked to it in 32 bits (see value.rel).
func (ck *checker) setScalar(st *state, r asm.Register, s Scalar) {
	v := &st.top().regs[r]
	if v.k != kScalar {
		return
	}
	v.s = s
	if v.id == 0 {
		return
	}
	id, rel, delta := v.id, v.rel, v.delta
	st.update(func(x value) bool { return x.k == kScalar && x.id == id && x.rel == rel && x.delta == delta },
		func(x *value) { x.s = s })
	// the low 32 bits of the id's number B lie in [lo, lo+span]
	// (modulo 2^32, without wrapping)
	t := s.trunc32()
	lo, span := t.umin, t.umax-t.umin
	if rel == rel32 {
		if !s.fits32() {
			return // (not reached: a rel32 value is zero-extended)
		}
		lo = uint64(uint32(lo) - delta)
	}
	if lo+span > math.MaxUint32 {
		return // the values wrap around 2^32: no interval
	}
	st.update(func(x value) bool { return x.k == kScalar && x.id == id && (x.rel != rel || x.delta != delta) },
		func(x *value) {
			var in Scalar
			switch {
			case x.rel == relCopy && x.s.fits32():
				in = uRange(lo, lo+span) // B is its own low half
			case x.rel == rel32:
				l := uint64(uint32(lo) + x.delta)
				if l+span > math.MaxUint32 {
					return
				}
				in = uRange(l, l+span)
			default:
				return
			}
			if m, ok := x.s.meet(in); ok {
				x.s = m
			}
		})
}

func cmp32(op asm.JumpOp, a, b uint32) bool {
	sa, sb := int32(a), int32(b)
	switch op {
	case asm.JumpEq:
		return a == b
	case asm.JumpNE:
		return a != b
	case asm.JumpGT:
		return a > b
	case asm.JumpGE:
		return a >= b
	case asm.JumpLT:
		return a < b
	case asm.JumpLE:
		return a <= b
	case asm.JumpSGT:
		return sa > sb
	case asm.JumpSGE:
		return sa >= sb
	case asm.JumpSLT:
		return sa < sb
	case asm.JumpSLE:
		return sa <= sb
	case asm.JumpSet:
		return a&b != 0
	}
	return false
}

// refine returns the operands' ranges when the jump is taken (t) and when
// it falls through (f), and whether each outcome is possible.
func refine(op asm.JumpOp, a, b Scalar) (t, f [2]Scalar, okT, okF bool) {
	swap := func(x [2]Scalar, ok bool) ([2]Scalar, bool) { return [2]Scalar{x[1], x[0]}, ok }
	switch op {
	case asm.JumpEq:
		t, okT = eq(a, b)
		f, okF = ne(a, b)
	case asm.JumpNE:
		t, okT = ne(a, b)
		f, okF = eq(a, b)
	case asm.JumpGT: // b < a
		t, okT = swap(ult(b, a))
		f, okF = ule(a, b)
	case asm.JumpGE:
		t, okT = swap(ule(b, a))
		f, okF = ult(a, b)
	case asm.JumpLT:
		t, okT = ult(a, b)
		f, okF = swap(ule(b, a))
	case asm.JumpLE:
		t, okT = ule(a, b)
		f, okF = swap(ult(b, a))
	case asm.JumpSGT:
		t, okT = swap(slt(b, a))
		f, okF = sle(a, b)
	case asm.JumpSGE:
		t, okT = swap(sle(b, a))
		f, okF = slt(a, b)
	case asm.JumpSLT:
		t, okT = slt(a, b)
		f, okF = swap(sle(b, a))
	case asm.JumpSLE:
		t, okT = sle(a, b)
		f, okF = swap(slt(b, a))
	case asm.JumpSet:
		t, f = [2]Scalar{a, b}, [2]Scalar{a, b}
		okT = a.t.umax()&b.t.umax() != 0
		okF = a.t.v&b.t.v == 0
		if okF && b.isConst() {
			at, ok := a.t.intersect(tnum{0, ^b.constVal()})
			if ok {
				f[0].t = at
				f[0], okF = f[0].sync()
			}
		}
	}
	return
}

func eq(a, b Scalar) ([2]Scalar, bool) {
	m, ok := a.meet(b)
	return [2]Scalar{m, m}, ok
}

func ne(a, b Scalar) ([2]Scalar, bool) {
	if a.isConst() && b.isConst() {
		return [2]Scalar{a, b}, a.constVal() != b.constVal()
	}
	var ok1, ok2 bool = true, true
	if b.isConst() {
		a, ok1 = exclude(a, b.constVal())
	}
	if a.isConst() {
		b, ok2 = exclude(b, a.constVal())
	}
	return [2]Scalar{a, b}, ok1 && ok2
}

func exclude(s Scalar, c uint64) (Scalar, bool) {
	if s.umin == c {
		s.umin++
	} else if s.umax == c {
		s.umax--
	}
	if s.smin == int64(c) {
		s.smin++
	} else if s.smax == int64(c) {
		s.smax--
	}
	return s.sync()
}

// ult refines a < b (unsigned).
func ult(a, b Scalar) ([2]Scalar, bool) {
	if b.umax == 0 || a.umin == math.MaxUint64 {
		return [2]Scalar{a, b}, false
	}
	a.umax = min(a.umax, b.umax-1)
	b.umin = max(b.umin, a.umin+1)
	return sync2(a, b)
}

// ule refines a <= b (unsigned).
func ule(a, b Scalar) ([2]Scalar, bool) {
	a.umax = min(a.umax, b.umax)
	b.umin = max(b.umin, a.umin)
	return sync2(a, b)
}

func slt(a, b Scalar) ([2]Scalar, bool) {
	if b.smax == math.MinInt64 || a.smin == math.MaxInt64 {
		return [2]Scalar{a, b}, false
	}
	a.smax = min(a.smax, b.smax-1)
	b.smin = max(b.smin, a.smin+1)
	return sync2(a, b)
}

func sle(a, b Scalar) ([2]Scalar, bool) {
	a.smax = min(a.smax, b.smax)
	b.smin = max(b.smin, a.smin)
	return sync2(a, b)
}

func sync2(a, b Scalar) ([2]Scalar, bool) {
	a, ok1 := a.sync()
	b, ok2 := b.sync()
	return [2]Scalar{a, b}, ok1 && ok2
}

// ptrBranch allows only null checks: a nullable pointer compared with 0,
// which splits the path into a null side and a valid side. A valid
// pointer compared with 0 is decided.
func (ck *checker) ptrBranch(st *state, pc int, ins asm.Instruction, a, b value, target, fall int) (int, *state, int, *Error) {
	op := ins.Op.JumpOp()
	p, q := a, b
	if !p.isPtr() {
		p, q = b, a
	}
	isZero := q.k == kScalar && q.s.isConst() && q.s.constVal() == 0
	if ins.Op.Class() == asm.ClassJMP32 || q.isPtr() || !isZero || (op != asm.JumpEq && op != asm.JumpNE) {
		return -1, nil, 0, ck.errorf(PointerCompare, pc, "pointers may only be compared with 0 (==, !=, 64-bit); here %s is compared with %s", a.describe(ck), b.describe(ck))
	}
	if !ck.inObject(p) {
		return -1, nil, 0, ck.errorf(PointerCompare, pc, "%s is compared with 0, but its offset may leave its object, so its address may be anything, 0 included: compare before moving the pointer, or bound the offset first", p.describe(ck))
	}
	if !p.isNullable() {
		if op == asm.JumpEq {
			return fall, nil, 0, nil
		}
		return target, nil, 0, nil
	}
	null := ck.fork(st)
	ck.setNull(null, p, true)
	ck.setNull(st, p, false)
	if op == asm.JumpEq {
		return fall, null, target, nil
	}
	return target, null, fall, nil
}

// setNull resolves every copy of nullable pointer p: to 0 on the null side,
// to a valid pointer on the other.
func (ck *checker) setNull(st *state, p value, isNull bool) {
	if isNull && p.k == kAllocOrNull {
		st.dropRef(p.id)
	}
	st.update(func(v value) bool { return v.isNullable() && v.id == p.id }, func(v *value) {
		switch {
		case isNull:
			*v = constVal(0)
		case v.k == kMapValueOrNull:
			v.k = kMapValue // the id stays: it names the looked-up value
		default:
			v.k = kAlloc
		}
	})
}

// sameRegion reports two valid pointers into the same object (the stack
// of one frame, the value of one map lookup or global, the context, one
// ringbuf record): comparing them compares their offsets and reveals no
// address.
func sameRegion(a, b value) bool {
	if a.k != b.k || a.frame != b.frame || a.idx != b.idx || a.id != b.id || a.isNullable() || a.k == kMapHandle {
		return false
	}
	// map value pointers carry the id of their lookup (or globalID for
	// global data); id 0 (after a join) may mean different values
	return a.k != kMapValue || a.id != 0
}

// regionBranch compares two pointers into one region (p < end loops) by
// their offsets. Both point inside the object or just past its end (the
// caller checked), so their addresses neither wrap nor cross 2^63: the
// unsigned and signed orders of the addresses are the order of the
// offsets.
func (ck *checker) regionBranch(st *state, pc int, ins asm.Instruction, a, b value, target, fall int) (int, *state, int, *Error) {
	op := ins.Op.JumpOp()
	switch op {
	case asm.JumpGT:
		op = asm.JumpSGT
	case asm.JumpGE:
		op = asm.JumpSGE
	case asm.JumpLT:
		op = asm.JumpSLT
	case asm.JumpLE:
		op = asm.JumpSLE
	}
	t, f, okT, okF := refine(op, a.s, b.s)
	apply := func(s *state, v [2]Scalar) {
		regs := &s.top().regs
		regs[ins.Dst].s = v[0]
		if ins.Src != ins.Dst {
			regs[ins.Src].s = v[1]
		}
	}
	return ck.take(st, pc, a, b, target, fall, t, f, okT, okF, apply)
}

// take follows the outcomes of a comparison of a and b that are possible
// (okT, okF): both fork the state, each side refined by apply with its
// bounds (t, f); one continues on st. It returns the step's next pc, fork
// and fork pc; no possible outcome ends the path.
func (ck *checker) take(st *state, pc int, a, b value, target, fall int, t, f [2]Scalar, okT, okF bool,
	apply func(*state, [2]Scalar)) (int, *state, int, *Error) {
	switch {
	case okT && okF:
		fork := ck.fork(st)
		apply(fork, t)
		apply(st, f)
		return fall, fork, target, nil
	case okT:
		apply(st, t)
		return target, nil, 0, nil
	case okF:
		apply(st, f)
		return fall, nil, 0, nil
	}
	return -1, nil, 0, nil
}

// refine32 refines a for a 32-bit comparison of the low halves of a and b
// when a's 64-bit value is not simply its 32-bit view: a sign-extended
// int (in [-2^31, 2^31)) compared unsigned, or a zero-extended one (in
// [0, 2^32)) compared signed, as clang emits for int indices checked on
// both sides. a is split into the pieces on which the view is a shift of
// the value ([-2^31, 0), [0, 2^31), [2^31, 2^32)); each piece's view is
// refined and shifted back, and the pieces' hull is met with a. b is not
// refined (t[1], f[1] are b unchanged). When a has values outside
// [-2^31, 2^32), nothing is refined and both outcomes are possible.
func refine32(op asm.JumpOp, a, b Scalar, bImm bool, imm int64) (t, f [2]Scalar, okT, okF bool) {
	signed := op == asm.JumpSGT || op == asm.JumpSGE || op == asm.JumpSLT || op == asm.JumpSLE
	var bv Scalar
	switch {
	case bImm && signed:
		bv = constScalar(uint64(imm))
	case bImm:
		bv = constScalar(uint64(uint32(imm)))
	case signed:
		bv = b.sext32()
	default:
		bv = b.trunc32()
	}
	t, f = [2]Scalar{a, b}, [2]Scalar{a, b}
	if a.smin < math.MinInt32 || a.smax > math.MaxUint32 {
		return t, f, true, true
	}
	const two32 = int64(1) << 32
	pieces := []struct {
		lo, hi int64
		shift  int64 // view = value + shift
	}{
		{math.MinInt32, -1, 0},
		{0, math.MaxInt32, 0},
		{math.MaxInt32 + 1, math.MaxUint32, 0},
	}
	if signed {
		pieces[2].shift = -two32
	} else {
		pieces[0].shift = two32
	}
	var tHull, fHull Scalar
	for _, pc := range pieces {
		ps, ok := a.meet(sRange(pc.lo, pc.hi))
		if !ok {
			continue
		}
		view := scalarOp(asm.ALUAdd, ps, constScalar(uint64(pc.shift)), false)
		pt, pf, pokT, pokF := refine(op, view, bv)
		back := func(v Scalar) Scalar {
			r, ok := scalarOp(asm.ALUSub, v, constScalar(uint64(pc.shift)), false).meet(ps)
			if !ok {
				return ps
			}
			return r
		}
		if pokT {
			tHull = hullAdd(tHull, back(pt[0]), okT)
			okT = true
		}
		if pokF {
			fHull = hullAdd(fHull, back(pf[0]), okF)
			okF = true
		}
	}
	if okT {
		if m, ok := a.meet(tHull); ok {
			t[0] = m
		}
	}
	if okF {
		if m, ok := a.meet(fHull); ok {
			f[0] = m
		}
	}
	return t, f, okT, okF
}

// hullAdd returns the join of h and s, or s when h holds nothing yet.
func hullAdd(h, s Scalar, have bool) Scalar {
	if !have {
		return s
	}
	return joinScalar(h, s)
}

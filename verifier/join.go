package verifier

import (
	"math"
	"math/bits"
)

// Joining states: when many different states reach the same prune point,
// the path-sensitive exploration would otherwise enumerate every
// combination of earlier branches. Past a threshold, the new state is
// replaced by its join (least upper bound) with a finished state there,
// which covers both; exploring it proves both safe at once. The join is
// only ever applied against finished states, so loops still unroll while
// their counter is precise.

// joinAfter is the number of states stored at a pc before new states are
// joined instead of explored separately.
const joinAfter = 2

// joiner maps pairs of ids of the two joined states to ids of the result.
// Two values of the result share an id exactly when they shared one in
// each of the joined states: a pair of equal ids keeps its id (the same
// lookup, copy or record on both paths), any other pair gets a fresh one.
type joiner struct {
	ck    *checker
	widen bool // widen scalar bounds (repeated joins at one pc)
	pairA []uint32
	pairB []uint32
	out   []uint32
	// refA and refB are the ringbuf references the joined states hold, in
	// the order they pair up; a record pointer joins only with the record
	// its pair holds on the other side.
	refA, refB []uint32
}

func (j *joiner) id(a, b uint32) uint32 {
	for i := range j.pairA {
		if j.pairA[i] == a && j.pairB[i] == b {
			return j.out[i]
		}
	}
	id := a
	if a != b {
		id = j.ck.newID()
	}
	j.pairA = append(j.pairA, a)
	j.pairB = append(j.pairB, b)
	j.out = append(j.out, id)
	return id
}

func joinTnum(a, b tnum) tnum {
	mu := a.m | b.m | (a.v ^ b.v)
	return tnum{a.v &^ mu, mu}
}

func joinScalar(a, b Scalar) Scalar {
	return Scalar{min(a.smin, b.smin), max(a.smax, b.smax), min(a.umin, b.umin), max(a.umax, b.umax), joinTnum(a.t, b.t)}
}

// pow2m1 rounds x up to the next 2^k-1.
func pow2m1(x uint64) uint64 {
	if x == 0 {
		return 0
	}
	return math.MaxUint64 >> bits.LeadingZeros64(x)
}

// widenScalar covers old and cur, moving every bound that cur exceeds to
// the next power of two (minus one), so that repeated joins at one pc
// converge in a few steps instead of one per new value.
func widenScalar(old, cur Scalar) Scalar {
	if old.contains(cur) {
		return old
	}
	j := joinScalar(old, cur)
	if j.umax > old.umax {
		j.umax = pow2m1(j.umax)
	}
	if j.umin < old.umin {
		j.umin = 0
	}
	if j.smax > old.smax {
		if j.smax >= 0 {
			j.smax = int64(pow2m1(uint64(j.smax)))
		} else {
			j.smax = -1
		}
	}
	if j.smin < old.smin {
		if j.smin < 0 {
			j.smin = -int64(pow2m1(uint64(-(j.smin + 1)))) - 1
		} else {
			j.smin = 0
		}
	}
	if j.t != old.t {
		j.t = tnumUnknown
	}
	r, ok := j.sync()
	if !ok {
		return joinScalar(old, cur)
	}
	return r
}

func isNull(v value) bool { return v.k == kScalar && v.s.isConst() && v.s.constVal() == 0 }

// joinValue returns a value that covers both a and b; uninitialized when
// they have nothing in common (reading it is then rejected, which is
// sound).
func (j *joiner) joinValue(a, b value) value {
	switch {
	case a == b && a.k != kAlloc && a.k != kAllocOrNull:
		// (a record pointer must still be checked against the references)
		return a
	case a.k == kUninit || b.k == kUninit:
		return value{}
	case (a.k == kHalves || b.k == kHalves) && (a.k == kScalar || a.k == kHalves) && (b.k == kScalar || b.k == kHalves):
		return joinHalves(a, b, j.widen)
	case a.k == kScalar && b.k == kScalar:
		r := value{k: kScalar, s: joinScalar(a.s, b.s)}
		if j.widen {
			r.s = widenScalar(a.s, b.s)
		}
		if a.id != 0 && b.id != 0 && a.rel == b.rel && a.delta == b.delta {
			r.id, r.rel, r.delta = j.id(a.id, b.id), a.rel, a.delta
		}
		return r
	}
	// a map value pointer or null on one side, a null or a map value
	// pointer on the other
	orNull := func(v value) bool {
		return v.k == kMapValue || v.k == kMapValueOrNull || isNull(v)
	}
	if orNull(a) && orNull(b) && (a.k != kScalar || b.k != kScalar) {
		if a.k != kScalar && b.k != kScalar && a.idx != b.idx {
			return value{}
		}
		r := a
		if a.k == kScalar {
			r = b
		}
		ida, idb := a.id, b.id
		if isNull(a) {
			ida = ^uint32(0)
		}
		if isNull(b) {
			idb = ^uint32(0)
		}
		s := r.s
		if a.k != kScalar && b.k != kScalar {
			s = joinScalar(a.s, b.s)
		}
		if a.k == kMapValue && b.k == kMapValue {
			if a.id == 0 || b.id == 0 {
				return value{} // (never made) a pointer of unknown origin
			}
			return value{k: kMapValue, idx: a.idx, id: j.id(a.id, b.id), s: s}
		}
		// the pointer side must not be able to equal 0: a null check
		// tells the two apart only if the pointer stays inside its value
		if !j.ck.inObject(r) {
			return value{}
		}
		return value{k: kMapValueOrNull, idx: r.idx, id: j.id(ida, idb), s: s}
	}
	if a.k != b.k || a.frame != b.frame || a.idx != b.idx {
		return value{}
	}
	r := a
	r.s = joinScalar(a.s, b.s)
	switch a.k {
	case kAlloc, kAllocOrNull:
		// a record pointer stays tied to one reference: if it is not the
		// pair of records the two paths hold at the same place, it is a
		// pointer to no held record (any use is refused)
		r.id = j.ck.newID()
		for i := range j.refA {
			if j.refA[i] == a.id && j.refB[i] == b.id {
				r.id = j.id(a.id, b.id)
				break
			}
		}
	case kCtx:
		if !r.s.isConst() {
			return value{}
		}
	}
	return r
}

// joinStack returns a stack covering a and b. With inPlace (the result
// replaces a, whose vals no other stack shares) the result's spilled
// values are written over a's: the k-th slot spilled on both sides has a
// rank of at least k in a, so each of a's values is read before its place
// is written.
func (j *joiner) joinStack(a, b *stack, inPlace bool) stack {
	var r stack
	if inPlace && !a.shared {
		r.vals = a.vals[:0]
	} else if n := bits.OnesCount64(a.spill & b.spill); n > 0 {
		r.vals = make([]value, 0, n) // slots join only where both spilled
	}
	for w := range r.init {
		r.init[w] = a.init[w] & b.init[w]
	}
	same := true // the result's spilled values are a's
	for bitsLeft := a.spill | b.spill; bitsLeft != 0; bitsLeft &= bitsLeft - 1 {
		i := bits.TrailingZeros64(bitsLeft)
		sa, sb := a.spilled(i), b.spilled(i)
		var va, vb value
		if sa {
			va = a.slot(i)
		}
		if sb {
			vb = b.slot(i)
		}
		if sa && sb {
			if v := j.joinValue(va, vb); v.k != kUninit {
				r.vals = append(r.vals, v)
				r.spill |= 1 << i
				same = same && v == va
				continue
			}
		}
		same = false
		// plain bytes on at least one side: they stay initialized only
		// when neither side holds a pointer there
		if va.isAddr() || vb.isAddr() {
			for bt := 8 * i; bt < 8*i+8; bt++ {
				r.clearInit(bt)
			}
		}
	}
	if same && r.spill == a.spill && a.vals != nil {
		a.shared = true
		r.vals, r.shared = a.vals, true
	}
	return r
}

// join returns a state covering a and b, or nil when they differ in shape
// (call chain, pending ringbuf records). With widen, scalar bounds of b
// beyond a's jump to the next power of two.
func (ck *checker) join(a, b *state, widen bool) *state {
	if len(a.frames) != len(b.frames) || len(a.refs) != len(b.refs) {
		return nil
	}
	j := &joiner{ck: ck, widen: widen, refA: a.refs, refB: b.refs}
	r := &state{frames: make([]frame, len(a.frames))}
	for fi := range a.frames {
		fa, fb := &a.frames[fi], &b.frames[fi]
		if fa.callsite != fb.callsite {
			return nil
		}
		r.frames[fi].callsite, r.frames[fi].ctx = fa.callsite, fa.ctx
		for reg := range fa.regs {
			r.frames[fi].regs[reg] = j.joinValue(fa.regs[reg], fb.regs[reg])
		}
		r.frames[fi].stk = j.joinStack(&fa.stk, &fb.stk, false)
	}
	// pending records correspond one to one, in reservation order; a
	// record no register or slot points to any more stays held (it can
	// then never be released, which exit reports)
	for i := range a.refs {
		r.refs = append(r.refs, j.id(a.refs[i], b.refs[i]))
	}
	if ck.refPC != nil {
		for i, id := range r.refs {
			if _, ok := ck.refPC[id]; !ok {
				ck.refPC[id] = ck.refPC[a.refs[i]]
			}
		}
	}
	return r
}

// joinInto is join without allocating a state: a becomes the join of a
// and b, which must be the only reference to a. It does nothing and
// returns false where join could fail (different call chains, pending
// ringbuf records), so that a is never left half joined.
func (ck *checker) joinInto(a, b *state) bool {
	if len(a.frames) != len(b.frames) || len(a.refs) != 0 || len(b.refs) != 0 {
		return false
	}
	for fi := range a.frames {
		if a.frames[fi].callsite != b.frames[fi].callsite {
			return false
		}
	}
	j := &joiner{ck: ck}
	for fi := range a.frames {
		fa, fb := &a.frames[fi], &b.frames[fi]
		// each register and slot is read before it is overwritten, and
		// ids are paired by the values read, so this equals join(a, b)
		for reg := range fa.regs {
			fa.regs[reg] = j.joinValue(fa.regs[reg], fb.regs[reg])
		}
		fa.stk = j.joinStack(&fa.stk, &fb.stk, true)
	}
	return true
}

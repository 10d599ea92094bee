package verifier

import (
	"math"

	"github.com/ncclbpf/ncclbpf/asm"
)

// A stack slot written 4 bytes at a time (an int whose address is taken,
// two ints side by side) keeps both numbers: the slot holds a kHalves
// value. Its Scalar encodes the two halves: umin/umax bound the low half
// (bytes 0-3 of the slot), smin/smax the high half (bytes 4-7), both as
// unsigned 32-bit numbers, and t holds the known bits of all 8 bytes.
// Such a value lives only in stack slots: a load turns it back into a
// scalar, and no Scalar method that relates the signed and unsigned
// bounds (sync) is ever applied to it.

// halves returns the low and high 4-byte numbers of a kHalves slot, or of
// a spilled scalar, zero-extended.
func (v value) halves() (lo, hi Scalar) {
	if v.k == kScalar {
		return v.s.trunc32(), shiftOp(asm.ALURsh, v.s, constScalar(32), 63)
	}
	lo, hi = uRange(v.s.umin, v.s.umax), uRange(uint64(v.s.smin), uint64(v.s.smax))
	if l, ok := lo.meet(Scalar{0, math.MaxUint32, 0, math.MaxUint32, tnum{v.s.t.v & math.MaxUint32, v.s.t.m & math.MaxUint32}}); ok {
		lo = l
	}
	if h, ok := hi.meet(Scalar{0, math.MaxUint32, 0, math.MaxUint32, tnum{v.s.t.v >> 32, v.s.t.m >> 32}}); ok {
		hi = h
	}
	return lo, hi
}

// halvesVal builds the slot value of two 4-byte numbers (zero-extended
// scalars; only their low 32 bits count).
func halvesVal(lo, hi Scalar) value {
	lo, hi = lo.trunc32(), hi.trunc32()
	return value{k: kHalves, s: Scalar{
		smin: int64(hi.umin), smax: int64(hi.umax),
		umin: lo.umin, umax: lo.umax,
		t: tnum{hi.t.v<<32 | lo.t.v, hi.t.m<<32 | lo.t.m},
	}}
}

// whole returns the 8-byte number a kHalves slot holds.
func (v value) whole() Scalar {
	lo, hi := v.halves()
	s := uRange(hi.umin<<32|lo.umin, hi.umax<<32|lo.umax)
	if r, ok := s.meet(Scalar{math.MinInt64, math.MaxInt64, 0, math.MaxUint64, v.s.t}); ok {
		return r
	}
	return s
}

// joinHalves covers two slots of which at least one holds halves.
func joinHalves(a, b value, widen bool) value {
	if !widen && a.k == kHalves && b.k == kHalves {
		// the encoding is componentwise: bounds and known bits join alike
		return value{k: kHalves, s: joinScalar(a.s, b.s)}
	}
	alo, ahi := a.halves()
	blo, bhi := b.halves()
	if widen {
		return halvesVal(widenScalar(alo, blo), widenScalar(ahi, bhi))
	}
	return halvesVal(joinScalar(alo, blo), joinScalar(ahi, bhi))
}

// storeBytes returns the slot after a store of the low size bytes of s at
// byte at of the slot (a 1- or 2-byte store, or a 4-byte one that is not
// a whole half), given the slot's previous value prev (a spilled scalar
// or halves; anything else counts as unknown bytes). The bytes the store
// does not touch keep what prev knew of them; the touched half keeps the
// bits the store and prev make known (clang builds char arrays on the
// stack, format strings among them, with such stores).
func storeBytes(prev value, at, size int, s Scalar) value {
	lo, hi := widthScalar(4), widthScalar(4)
	if prev.k == kScalar || prev.k == kHalves {
		lo, hi = prev.halves()
	}
	mask := uint64(1)<<(8*size) - 1
	put := func(half Scalar, base int) Scalar {
		// the bytes of [at, at+size) that fall in this half, in its
		// 32-bit coordinates
		first, last := max(at, base), min(at+size, base+4)
		if first >= last {
			return half
		}
		sh := 8 * (at - base) // may be negative: the store starts in the low half
		stored := tnum{s.t.v & mask, s.t.m & mask}
		var m uint64
		if sh >= 0 {
			stored = stored.lsh(uint(sh))
			m = mask << uint(sh)
		} else {
			stored = stored.rsh(uint(-sh))
			m = mask >> uint(-sh)
		}
		m &= math.MaxUint32
		t := tnum{(half.t.v&^m | stored.v&m) & math.MaxUint32, (half.t.m&^m | stored.m&m) & math.MaxUint32}
		r, ok := Scalar{math.MinInt64, math.MaxInt64, 0, math.MaxUint64, t}.sync()
		if !ok {
			return widthScalar(4) // (not reached: a tnum always has a value)
		}
		return r
	}
	return halvesVal(put(lo, 0), put(hi, 4))
}

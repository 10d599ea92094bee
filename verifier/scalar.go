package verifier

import (
	"fmt"
	"math"
)

// Scalar is the abstract value of a 64-bit number: a signed interval, an
// unsigned interval and known bits, kept consistent with one another by
// sync. Every concrete value the number can take lies in all three.
type Scalar struct {
	smin, smax int64
	umin, umax uint64
	t          tnum
}

func unknownScalar() Scalar {
	return Scalar{math.MinInt64, math.MaxInt64, 0, math.MaxUint64, tnumUnknown}
}

func constScalar(c uint64) Scalar {
	return Scalar{int64(c), int64(c), c, c, tconst(c)}
}

// uRange returns the scalar with unsigned values in [lo, hi].
func uRange(lo, hi uint64) Scalar {
	s := unknownScalar()
	s.umin, s.umax = lo, hi
	s, _ = s.sync()
	return s
}

// sRange returns the scalar with signed values in [lo, hi].
func sRange(lo, hi int64) Scalar {
	s := unknownScalar()
	s.smin, s.smax = lo, hi
	s, _ = s.sync()
	return s
}

// widthScalar is an unknown zero-extended value of n bytes.
func widthScalar(n int) Scalar {
	if n >= 8 {
		return unknownScalar()
	}
	return uRange(0, uint64(1)<<(8*n)-1)
}

// sextScalar is an unknown sign-extended value of n bytes.
func sextScalar(n int) Scalar {
	if n >= 8 {
		return unknownScalar()
	}
	h := int64(1) << (8*n - 1)
	return sRange(-h, h-1)
}

func (s Scalar) isConst() bool    { return s.t.isConst() }
func (s Scalar) constVal() uint64 { return s.t.v }

// sync tightens the three views against each other. ok is false when the
// scalar has no value left (an infeasible branch).
func (s Scalar) sync() (Scalar, bool) {
	for i := 0; i < 3; i++ {
		// known bits -> unsigned
		s.umin = max(s.umin, s.t.umin())
		s.umax = min(s.umax, s.t.umax())
		// known bits -> signed
		const sign = uint64(1) << 63
		if s.t.m&sign == 0 {
			lo, hi := int64(s.t.v), int64(s.t.v|s.t.m)
			if lo > hi {
				lo, hi = hi, lo
			}
			s.smin = max(s.smin, lo)
			s.smax = min(s.smax, hi)
		}
		// signed <-> unsigned when the sign is the same throughout
		if s.smin >= 0 || s.smax < 0 {
			s.umin = max(s.umin, uint64(s.smin))
			s.umax = min(s.umax, uint64(s.smax))
		}
		if s.umax <= math.MaxInt64 || s.umin > math.MaxInt64 {
			s.smin = max(s.smin, int64(s.umin))
			s.smax = min(s.smax, int64(s.umax))
		}
		if s.umin > s.umax || s.smin > s.smax {
			return s, false
		}
		// unsigned -> known bits
		t, ok := s.t.intersect(trange(s.umin, s.umax))
		if !ok {
			return s, false
		}
		s.t = t
	}
	if s.umin > s.umax || s.smin > s.smax {
		return s, false
	}
	return s, true
}

// meet returns the values in both s and o.
func (s Scalar) meet(o Scalar) (Scalar, bool) {
	t, ok := s.t.intersect(o.t)
	if !ok {
		return s, false
	}
	r := Scalar{max(s.smin, o.smin), min(s.smax, o.smax), max(s.umin, o.umin), min(s.umax, o.umax), t}
	return r.sync()
}

// contains reports whether every value of o is a value of s.
func (s Scalar) contains(o Scalar) bool {
	return s.smin <= o.smin && o.smax <= s.smax && s.umin <= o.umin && o.umax <= s.umax && s.t.contains(o.t)
}

func (s Scalar) String() string {
	if s.isConst() {
		v := s.constVal()
		if int64(v) < 0 && int64(v) > -4096 {
			return fmt.Sprint(int64(v))
		}
		return fmt.Sprint(v)
	}
	var parts []string
	if s.umin != 0 || s.umax != math.MaxUint64 {
		parts = append(parts, fmt.Sprintf("u[%d,%d]", s.umin, s.umax))
	}
	if (s.smin != math.MinInt64 || s.smax != math.MaxInt64) && (s.smin < 0 || s.umax > math.MaxInt64) {
		parts = append(parts, fmt.Sprintf("s[%d,%d]", s.smin, s.smax))
	}
	if s.t.m != ^uint64(0) && s.t != trange(s.umin, s.umax) {
		parts = append(parts, fmt.Sprintf("bits %#x/%#x", s.t.v, s.t.m))
	}
	if len(parts) == 0 {
		return "unknown"
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += " " + p
	}
	return out
}

// fits32 reports whether every value is in [0, 2^32).
func (s Scalar) fits32() bool { return s.umax <= math.MaxUint32 }

// trunc32 returns the low 32 bits, zero-extended.
func (s Scalar) trunc32() Scalar {
	if s.fits32() {
		return s
	}
	r := unknownScalar()
	r.t = s.t.trunc(4)
	r.umin, r.umax = 0, math.MaxUint32
	// when the upper bits are constant the low range carries over
	if s.umax-s.umin <= math.MaxUint32 && s.umin>>32 == s.umax>>32 {
		r.umin, r.umax = s.umin&math.MaxUint32, s.umax&math.MaxUint32
	}
	r, _ = r.sync()
	return r
}

// sext32 returns the low 32 bits, sign-extended to 64.
func (s Scalar) sext32() Scalar {
	lo := s.trunc32()
	if lo.isConst() {
		return constScalar(uint64(int64(int32(uint32(lo.constVal())))))
	}
	if lo.umax <= math.MaxInt32 {
		return lo
	}
	if lo.umin > math.MaxInt32 {
		return sRange(int64(int32(uint32(lo.umin))), int64(int32(uint32(lo.umax))))
	}
	return sextScalar(4)
}

package verifier

import "math/bits"

// tnum is a partially known 64-bit value: bits set in m are unknown; the
// other bits equal those of v (v&m == 0). It tracks masks and alignments
// that intervals lose.
type tnum struct{ v, m uint64 }

var tnumUnknown = tnum{0, ^uint64(0)}

func tconst(c uint64) tnum { return tnum{c, 0} }

func (a tnum) isConst() bool { return a.m == 0 }

// trange returns the tnum of all values in [lo, hi].
func trange(lo, hi uint64) tnum {
	chi := lo ^ hi
	if chi == 0 {
		return tconst(lo)
	}
	n := 64 - bits.LeadingZeros64(chi)
	if n >= 64 {
		return tnumUnknown
	}
	mask := uint64(1)<<n - 1
	return tnum{lo &^ mask, mask}
}

func (a tnum) add(b tnum) tnum {
	sm := a.m + b.m
	sv := a.v + b.v
	sigma := sm + sv
	chi := sigma ^ sv
	mu := chi | a.m | b.m
	return tnum{sv &^ mu, mu}
}

func (a tnum) sub(b tnum) tnum {
	dv := a.v - b.v
	alpha := dv + a.m
	beta := dv - b.m
	chi := alpha ^ beta
	mu := chi | a.m | b.m
	return tnum{dv &^ mu, mu}
}

func (a tnum) and(b tnum) tnum {
	alpha := a.v | a.m
	beta := b.v | b.m
	v := a.v & b.v
	return tnum{v, alpha & beta &^ v}
}

func (a tnum) or(b tnum) tnum {
	v := a.v | b.v
	mu := a.m | b.m
	return tnum{v, mu &^ v}
}

func (a tnum) xor(b tnum) tnum {
	v := a.v ^ b.v
	mu := a.m | b.m
	return tnum{v &^ mu, mu}
}

func (a tnum) lsh(k uint) tnum { return tnum{a.v << k, a.m << k} }
func (a tnum) rsh(k uint) tnum { return tnum{a.v >> k, a.m >> k} }

func (a tnum) arsh(k uint) tnum {
	return tnum{uint64(int64(a.v) >> k), uint64(int64(a.m) >> k)}
}

// mul multiplies by shift-and-add over the bits of a (sound, a little
// imprecise).
func (a tnum) mul(b tnum) tnum {
	if a.isConst() && b.isConst() {
		return tconst(a.v * b.v)
	}
	acc := tconst(0)
	for i := 0; i < 64; i++ {
		bit := uint64(1) << i
		if (a.v|a.m)&bit == 0 {
			continue
		}
		term := b.lsh(uint(i))
		if a.m&bit != 0 {
			// bit unknown: the term is either 0 or b<<i
			term = tnum{0, term.v | term.m}
		}
		acc = acc.add(term)
		if acc.m == ^uint64(0) {
			break
		}
	}
	return acc
}

// intersect returns the values in both a and b; ok is false when none.
func (a tnum) intersect(b tnum) (tnum, bool) {
	known := ^a.m & ^b.m
	if (a.v^b.v)&known != 0 {
		return tnum{}, false
	}
	v := a.v | b.v
	mu := a.m & b.m
	return tnum{v &^ mu, mu}, true
}

// contains reports whether every value of b is a value of a.
func (a tnum) contains(b tnum) bool {
	if b.m&^a.m != 0 {
		return false
	}
	return (a.v^b.v)&^a.m == 0
}

// trunc keeps the low n bytes.
func (a tnum) trunc(n int) tnum {
	if n >= 8 {
		return a
	}
	mask := uint64(1)<<(8*n) - 1
	return tnum{a.v & mask, a.m & mask}
}

// umin and umax are the extreme unsigned values of a.
func (a tnum) umin() uint64 { return a.v }
func (a tnum) umax() uint64 { return a.v | a.m }

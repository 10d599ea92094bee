package verifier

import (
	"math"
	"math/bits"

	"github.com/ncclbpf/ncclbpf/asm"
)

// scalarOp computes the abstract result of a 64-bit ALU operation on
// scalars. For ALUDiv and ALUMod, signed selects the signed (v4) forms.
func scalarOp(op asm.ALUOp, a, b Scalar, signed bool) Scalar {
	if a.isConst() && b.isConst() {
		if v, ok := concreteOp(op, a.constVal(), b.constVal(), signed, true); ok {
			return constScalar(v)
		}
	}
	r := unknownScalar()
	switch op {
	case asm.ALUAdd:
		r.t = a.t.add(b.t)
		if lo, ok1 := addS(a.smin, b.smin); ok1 {
			if hi, ok2 := addS(a.smax, b.smax); ok2 {
				r.smin, r.smax = lo, hi
			}
		}
		if hi, c := bits.Add64(a.umax, b.umax, 0); c == 0 {
			r.umin, r.umax = a.umin+b.umin, hi
		}
	case asm.ALUSub:
		r.t = a.t.sub(b.t)
		if lo, ok1 := subS(a.smin, b.smax); ok1 {
			if hi, ok2 := subS(a.smax, b.smin); ok2 {
				r.smin, r.smax = lo, hi
			}
		}
		if a.umin >= b.umax {
			r.umin, r.umax = a.umin-b.umax, a.umax-b.umin
		}
	case asm.ALUMul:
		r.t = a.t.mul(b.t)
		if hi, lo := bits.Mul64(a.umax, b.umax); hi == 0 {
			r.umin, r.umax = a.umin*b.umin, lo
		}
	case asm.ALUDiv:
		if signed {
			break
		}
		if b.umin >= 1 {
			r.umin, r.umax = a.umin/b.umax, a.umax/b.umin
		} else {
			r.umin, r.umax = 0, a.umax
		}
	case asm.ALUMod:
		if signed {
			break
		}
		r.umin = 0
		r.umax = a.umax
		if b.umin >= 1 {
			r.umax = min(a.umax, b.umax-1)
		}
	case asm.ALUAnd:
		r.t = a.t.and(b.t)
		r.umax = min(a.umax, b.umax)
	case asm.ALUOr:
		r.t = a.t.or(b.t)
		r.umin = max(a.umin, b.umin)
	case asm.ALUXor:
		r.t = a.t.xor(b.t)
	case asm.ALULsh, asm.ALURsh, asm.ALUArsh:
		return shiftOp(op, a, b, 63)
	}
	r, ok := r.sync()
	if !ok {
		return unknownScalar()
	}
	return r
}

// shiftOp handles shifts; mask is 63 (64-bit) or 31 (32-bit, with a
// already truncated to 32 bits).
func shiftOp(op asm.ALUOp, a, b Scalar, mask uint64) Scalar {
	var lo, hi uint64
	switch {
	case b.isConst():
		lo = b.constVal() & mask
		hi = lo
	case b.umax <= mask:
		lo, hi = b.umin, b.umax
	default:
		if op == asm.ALURsh {
			return uRange(0, a.umax)
		}
		return unknownScalar()
	}
	r := unknownScalar()
	switch op {
	case asm.ALULsh:
		if lo == hi {
			r.t = a.t.lsh(uint(lo))
		}
		if a.umax == 0 || bits.LeadingZeros64(a.umax) >= int(hi) {
			r.umin, r.umax = a.umin<<lo, a.umax<<hi
		}
	case asm.ALURsh:
		if lo == hi {
			r.t = a.t.rsh(uint(lo))
		}
		r.umin, r.umax = a.umin>>hi, a.umax>>lo
	case asm.ALUArsh:
		if lo == hi {
			r.t = a.t.arsh(uint(lo))
		}
		r.smin = min(a.smin>>lo, a.smin>>hi)
		r.smax = max(a.smax>>lo, a.smax>>hi)
	}
	r, ok := r.sync()
	if !ok {
		return unknownScalar()
	}
	return r
}

// scalarOp32 computes a 32-bit ALU operation; the result is zero-extended.
func scalarOp32(op asm.ALUOp, a, b Scalar, signed bool) Scalar {
	a, b = a.trunc32(), b.trunc32()
	if a.isConst() && b.isConst() {
		if v, ok := concreteOp(op, a.constVal(), b.constVal(), signed, false); ok {
			return constScalar(v)
		}
	}
	switch op {
	case asm.ALULsh, asm.ALURsh:
		return shiftOp(op, a, b, 31).trunc32()
	case asm.ALUArsh:
		if a.umax <= math.MaxInt32 {
			return shiftOp(asm.ALURsh, a, b, 31)
		}
		return widthScalar(4)
	case asm.ALUDiv, asm.ALUMod:
		if signed {
			return widthScalar(4)
		}
		return scalarOp(op, a, b, false) // inputs are 32-bit: same result
	}
	// add, sub, mul, and, or, xor: the low 32 bits of the 64-bit result
	return scalarOp(op, a, b, false).trunc32()
}

func addS(a, b int64) (int64, bool) {
	c := a + b
	return c, (c > a) == (b > 0)
}

func subS(a, b int64) (int64, bool) {
	c := a - b
	return c, (c < a) == (b > 0)
}

// concreteOp computes op on concrete values with eBPF semantics (RFC
// 9669): division by zero gives 0, modulo by zero leaves the dividend.
func concreteOp(op asm.ALUOp, a, b uint64, signed, is64 bool) (uint64, bool) {
	if !is64 {
		a, b = uint64(uint32(a)), uint64(uint32(b))
	}
	sh := b & 63
	if !is64 {
		sh = b & 31
	}
	var r uint64
	switch op {
	case asm.ALUAdd:
		r = a + b
	case asm.ALUSub:
		r = a - b
	case asm.ALUMul:
		r = a * b
	case asm.ALUOr:
		r = a | b
	case asm.ALUAnd:
		r = a & b
	case asm.ALUXor:
		r = a ^ b
	case asm.ALULsh:
		r = a << sh
	case asm.ALURsh:
		r = a >> sh
	case asm.ALUArsh:
		if is64 {
			r = uint64(int64(a) >> sh)
		} else {
			r = uint64(uint32(int32(uint32(a)) >> sh))
		}
	case asm.ALUDiv, asm.ALUMod:
		if b == 0 {
			if op == asm.ALUDiv {
				return 0, true
			}
			return a, true
		}
		if !signed {
			if op == asm.ALUDiv {
				r = a / b
			} else {
				r = a % b
			}
			break
		}
		var x, y int64
		if is64 {
			x, y = int64(a), int64(b)
		} else {
			x, y = int64(int32(uint32(a))), int64(int32(uint32(b)))
		}
		if y == -1 {
			if op == asm.ALUDiv {
				r = uint64(-x)
			} else {
				r = 0
			}
			break
		}
		if op == asm.ALUDiv {
			r = uint64(x / y)
		} else {
			r = uint64(x % y)
		}
	default:
		return 0, false
	}
	if !is64 {
		r = uint64(uint32(r))
	}
	return r, true
}

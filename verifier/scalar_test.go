package verifier

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
)

// member reports whether the concrete value x is described by s.
func (s Scalar) member(x uint64) bool {
	return s.umin <= x && x <= s.umax && s.smin <= int64(x) && int64(x) <= s.smax && x&^s.t.m == s.t.v
}

var interesting = []uint64{0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256, 4095, 4096,
	math.MaxInt32, math.MaxInt32 + 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, 1 << 63,
	math.MaxUint64, math.MaxUint64 - 1, uint64(1<<63) + 5}

func randVal(rng *rand.Rand) uint64 {
	switch rng.IntN(4) {
	case 0:
		return interesting[rng.IntN(len(interesting))]
	case 1:
		return uint64(rng.IntN(300))
	case 2:
		return uint64(-int64(rng.IntN(300)))
	}
	return rng.Uint64() >> rng.IntN(64)
}

// randScalar returns an abstract scalar and concrete members of it.
func randScalar(rng *rand.Rand) (Scalar, []uint64) {
	a, b := randVal(rng), randVal(rng)
	var s Scalar
	switch rng.IntN(5) {
	case 0:
		s = constScalar(a)
	case 1:
		s = uRange(min(a, b), max(a, b))
	case 2:
		s = sRange(min(int64(a), int64(b)), max(int64(a), int64(b)))
	case 3:
		mask := randVal(rng)
		s = unknownScalar()
		s.t = tnum{a &^ mask, mask}
		s, _ = s.sync()
	default:
		s = uRange(min(a, b), max(a, b))
		s = scalarOp(asm.ALUAnd, s, constScalar(randVal(rng)), false)
	}
	var xs []uint64
	for i := 0; i < 200 && len(xs) < 12; i++ {
		var x uint64
		switch rng.IntN(4) {
		case 0:
			x = s.umin
		case 1:
			x = s.umax
		case 2:
			if s.umax-s.umin == math.MaxUint64 {
				x = rng.Uint64()
			} else {
				x = s.umin + rng.Uint64N(s.umax-s.umin+1)
			}
		default:
			x = s.t.v | rng.Uint64()&s.t.m
		}
		if s.member(x) {
			xs = append(xs, x)
		}
	}
	return s, xs
}

// TestScalarOpsSound checks, for random abstract operands and concrete
// members of them, that every concrete result is a member of the abstract
// result.
func TestScalarOpsSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ops := []asm.ALUOp{asm.ALUAdd, asm.ALUSub, asm.ALUMul, asm.ALUDiv, asm.ALUOr, asm.ALUAnd,
		asm.ALULsh, asm.ALURsh, asm.ALUMod, asm.ALUXor, asm.ALUArsh}
	for i := 0; i < 20000; i++ {
		a, xs := randScalar(rng)
		b, ys := randScalar(rng)
		op := ops[rng.IntN(len(ops))]
		signed := (op == asm.ALUDiv || op == asm.ALUMod) && rng.IntN(2) == 0
		r64 := scalarOp(op, a, b, signed)
		r32 := scalarOp32(op, a, b, signed)
		for _, x := range xs {
			for _, y := range ys {
				if c, _ := concreteOp(op, x, y, signed, true); !r64.member(c) {
					t.Fatalf("op %#x signed=%v: %#x in %v, %#x in %v: result %#x not in %v", op, signed, x, a, y, b, c, r64)
				}
				if c, _ := concreteOp(op, x, y, signed, false); !r32.member(c) {
					t.Fatalf("op32 %#x signed=%v: %#x in %v, %#x in %v: result %#x not in %v", op, signed, x, a, y, b, c, r32)
				}
			}
		}
	}
}

// TestRefineSound checks that branch refinement keeps every pair of
// concrete operands that takes (or does not take) the branch.
func TestRefineSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ops := []asm.JumpOp{asm.JumpEq, asm.JumpNE, asm.JumpGT, asm.JumpGE, asm.JumpLT, asm.JumpLE,
		asm.JumpSGT, asm.JumpSGE, asm.JumpSLT, asm.JumpSLE, asm.JumpSet}
	for i := 0; i < 20000; i++ {
		a, xs := randScalar(rng)
		b, ys := randScalar(rng)
		op := ops[rng.IntN(len(ops))]
		tt, ff, okT, okF := refine(op, a, b)
		for _, x := range xs {
			for _, y := range ys {
				taken := cmp64(op, x, y)
				if taken && (!okT || !tt[0].member(x) || !tt[1].member(y)) {
					t.Fatalf("op %#x: %#x in %v, %#x in %v taken, but refined to %v %v (ok %v)", op, x, a, y, b, tt[0], tt[1], okT)
				}
				if !taken && (!okF || !ff[0].member(x) || !ff[1].member(y)) {
					t.Fatalf("op %#x: %#x in %v, %#x in %v not taken, but refined to %v %v (ok %v)", op, x, a, y, b, ff[0], ff[1], okF)
				}
			}
		}
	}
}

func cmp64(op asm.JumpOp, a, b uint64) bool {
	sa, sb := int64(a), int64(b)
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
	}
	return a&b != 0
}

// TestTruncSound checks the 32-bit views.
func TestTruncSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for i := 0; i < 20000; i++ {
		a, xs := randScalar(rng)
		lo, sx := a.trunc32(), a.sext32()
		for _, x := range xs {
			if !lo.member(uint64(uint32(x))) {
				t.Fatalf("trunc32(%v) = %v misses %#x", a, lo, uint32(x))
			}
			if !sx.member(uint64(int64(int32(uint32(x))))) {
				t.Fatalf("sext32(%v) = %v misses %#x", a, sx, x)
			}
		}
	}
}

// TestRefine32Sound checks refine32 (32-bit comparisons of sign- and
// zero-extended values) against concrete comparisons of the low halves:
// every value that takes a side must stay in that side's range. The
// operands are drawn around the pieces' edges (0, ±2^31, 2^32) where a
// wrong shift would show.
func TestRefine32Sound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	ops := []asm.JumpOp{asm.JumpEq, asm.JumpNE, asm.JumpGT, asm.JumpGE, asm.JumpLT, asm.JumpLE,
		asm.JumpSGT, asm.JumpSGE, asm.JumpSLT, asm.JumpSLE}
	edges := []int64{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, 7, 8, math.MaxInt32 - 1, math.MaxInt32,
		math.MaxInt32 + 1, math.MaxUint32 - 1, math.MaxUint32}
	pick := func() int64 {
		if rng.IntN(2) == 0 {
			return edges[rng.IntN(len(edges))]
		}
		return rng.Int64N(math.MaxUint32+1-math.MinInt32) + math.MinInt32
	}
	for i := 0; i < 50000; i++ {
		lo, hi := pick(), pick()
		if lo > hi {
			lo, hi = hi, lo
		}
		a := sRange(lo, hi)
		op := ops[rng.IntN(len(ops))]
		imm := int64(int32(uint32(pick())))
		var b Scalar
		if rng.IntN(2) == 0 {
			b = sRange(imm, imm+int64(rng.IntN(5)))
		}
		bImm := b == (Scalar{})
		tt, ff, okT, okF := refine32(op, a, b, bImm, imm)
		for k := 0; k < 16; k++ {
			x := lo + rng.Int64N(hi-lo+1)
			if k == 0 {
				x = lo
			} else if k == 1 {
				x = hi
			}
			ys := []int64{imm}
			if !bImm {
				ys = []int64{b.smin, b.smax}
			}
			for _, y := range ys {
				yv := uint64(y)
				if bImm && !(op == asm.JumpSGT || op == asm.JumpSGE || op == asm.JumpSLT || op == asm.JumpSLE) {
					yv = uint64(uint32(imm))
				}
				taken := cmp32(op, uint32(uint64(x)), uint32(yv))
				if taken && (!okT || !tt[0].member(uint64(x))) {
					t.Fatalf("op %#x: %d in %v vs %d taken, but refined to %v (ok %v)", op, x, a, y, tt[0], okT)
				}
				if !taken && (!okF || !ff[0].member(uint64(x))) {
					t.Fatalf("op %#x: %d in %v vs %d not taken, but refined to %v (ok %v)", op, x, a, y, ff[0], okF)
				}
			}
		}
	}
}

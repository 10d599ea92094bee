package vm

import (
	"sync"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm/internal/testhelpers"
)

// atomicCase stores init at [r10-8] (r0 = cmp for CMPXCHG), runs the atomic
// op with src r1 = v, then returns either the memory (mem=true), the src
// register or r0.
func atomicCase(s asm.Size, op int32, init, v, cmp uint64, result asm.Register, mem bool) []ins {
	out := prog(ld64(r2, init), stx(DW, r10, r2, -8), ld64(r1, v), ld64(r0, cmp), atomicOp(s, op, r10, r1, -8))
	if mem {
		return prog(out, ldx(DW, r0, r10, -8), exit())
	}
	return prog(out, movr(r0, result), exit())
}

func TestAtomics(t *testing.T) {
	const (
		init = 0x1111_2222_f0f0_0f0f
		v    = 0x0101_0101_ff00_00ff
		F    = asm.AtomicFetch
	)
	cases := []runCase{
		{name: "add64", insns: atomicCase(DW, asm.AtomicAdd, init, v, 0, 0, true), want: init + v},
		{name: "add64 keeps src", insns: atomicCase(DW, asm.AtomicAdd, init, v, 0, r1, false), want: v},
		{name: "fetch add64", insns: atomicCase(DW, asm.AtomicAdd|F, init, v, 0, r1, false), want: init},
		{name: "fetch add64 memory", insns: atomicCase(DW, asm.AtomicAdd|F, init, v, 0, 0, true), want: init + v},
		{name: "add32 leaves upper word", insns: atomicCase(W, asm.AtomicAdd, init, v, 0, 0, true), want: 0x1111_2222_0000_0000 | ((init + v) & 0xffffffff)},
		{name: "fetch add32 zero-extends", insns: atomicCase(W, asm.AtomicAdd|F, init, v, 0, r1, false), want: 0xf0f0_0f0f},
		{name: "or64", insns: atomicCase(DW, asm.AtomicOr, init, v, 0, 0, true), want: init | v},
		{name: "fetch or64", insns: atomicCase(DW, asm.AtomicOr|F, init, v, 0, r1, false), want: init},
		{name: "or32", insns: atomicCase(W, asm.AtomicOr, init, v, 0, 0, true), want: 0x1111_2222_0000_0000 | ((init | v) & 0xffffffff)},
		{name: "fetch or32", insns: atomicCase(W, asm.AtomicOr|F, init, v, 0, r1, false), want: 0xf0f0_0f0f},
		{name: "and64", insns: atomicCase(DW, asm.AtomicAnd, init, v, 0, 0, true), want: init & v},
		{name: "fetch and64", insns: atomicCase(DW, asm.AtomicAnd|F, init, v, 0, r1, false), want: init},
		{name: "and32", insns: atomicCase(W, asm.AtomicAnd, init, v, 0, 0, true), want: 0x1111_2222_0000_0000 | ((init & v) & 0xffffffff)},
		{name: "fetch and32", insns: atomicCase(W, asm.AtomicAnd|F, init, v, 0, r1, false), want: 0xf0f0_0f0f},
		{name: "xor64", insns: atomicCase(DW, asm.AtomicXor, init, v, 0, 0, true), want: init ^ v},
		{name: "fetch xor64", insns: atomicCase(DW, asm.AtomicXor|F, init, v, 0, r1, false), want: init},
		{name: "xor32", insns: atomicCase(W, asm.AtomicXor, init, v, 0, 0, true), want: 0x1111_2222_0000_0000 | ((init ^ v) & 0xffffffff)},
		{name: "fetch xor32", insns: atomicCase(W, asm.AtomicXor|F, init, v, 0, r1, false), want: 0xf0f0_0f0f},
		{name: "xchg64 old", insns: atomicCase(DW, asm.AtomicXchg, init, v, 0, r1, false), want: init},
		{name: "xchg64 memory", insns: atomicCase(DW, asm.AtomicXchg, init, v, 0, 0, true), want: v},
		{name: "xchg32 old", insns: atomicCase(W, asm.AtomicXchg, init, v, 0, r1, false), want: 0xf0f0_0f0f},
		{name: "xchg32 memory", insns: atomicCase(W, asm.AtomicXchg, init, v, 0, 0, true), want: 0x1111_2222_ff00_00ff},
		{name: "cmpxchg64 equal: stores", insns: atomicCase(DW, asm.AtomicCmpXchg, init, v, init, 0, true), want: v},
		{name: "cmpxchg64 equal: r0 old", insns: atomicCase(DW, asm.AtomicCmpXchg, init, v, init, r0, false), want: init},
		{name: "cmpxchg64 differ: keeps", insns: atomicCase(DW, asm.AtomicCmpXchg, init, v, init+1, 0, true), want: init},
		{name: "cmpxchg64 differ: r0 old", insns: atomicCase(DW, asm.AtomicCmpXchg, init, v, init+1, r0, false), want: init},
		{name: "cmpxchg64 keeps src", insns: atomicCase(DW, asm.AtomicCmpXchg, init, v, init, r1, false), want: v},
		{name: "cmpxchg32 compares low half of r0", insns: atomicCase(W, asm.AtomicCmpXchg, init, v, 0xffff_0000_f0f0_0f0f, 0, true), want: 0x1111_2222_ff00_00ff},
		{name: "cmpxchg32 r0 zero-extended old", insns: atomicCase(W, asm.AtomicCmpXchg, init, v, 0xffff_0000_f0f0_0f0f, r0, false), want: 0xf0f0_0f0f},
		{name: "cmpxchg32 differ", insns: atomicCase(W, asm.AtomicCmpXchg, init, v, 5, 0, true), want: init},
		{name: "cmpxchg32 differ r0", insns: atomicCase(W, asm.AtomicCmpXchg, init, v, 5, r0, false), want: 0xf0f0_0f0f},
		// Traps.
		{name: "misaligned", insns: prog(mov(r1, 1), atomicOp(DW, asm.AtomicAdd, r10, r1, -12), mov(r0, 0), exit()), err: ErrMisaligned},
		{name: "misaligned 32", insns: prog(mov(r1, 1), atomicOp(W, asm.AtomicAdd, r10, r1, -6), mov(r0, 0), exit()), err: ErrMisaligned},
		{name: "outside", insns: prog(mov(r1, 1), atomicOp(DW, asm.AtomicAdd, r10, r1, 0), mov(r0, 0), exit()), err: ErrMemory},
	}
	runTable(t, cases, Program{})
}

// TestAtomicsAreAtomic runs, from many goroutines at once, a fetch-add loop
// on one native word and a compare-and-swap increment loop on another:
// every increment must land.
func TestAtomicsAreAtomic(t *testing.T) {
	base := uint64(testhelpers.Array) + 16
	const n = 1000
	p := Program{Insns: prog(
		ld64(r1, base), mov(r2, n), mov(r3, 1),
		atomicOp(DW, asm.AtomicAdd|asm.AtomicFetch, r1, r3, 0), // loop: fetch-add
		mov(r3, 1),
		mov(r5, 0), atomicOp(W, asm.AtomicOr|asm.AtomicFetch, r1, r5, 8), // retry: r5 = old (an atomic load)
		movr(r0, r5), movr(r4, r5), a64k(asm.ALUAdd, r4, 1), // r0 = old, r4 = old+1
		atomicOp(W, asm.AtomicCmpXchg, r1, r4, 8),
		jx(asm.ClassJMP32, asm.JumpNE, r0, r5, -7), // another thread won: retry
		a64k(asm.ALUSub, r2, 1), jk(asm.ClassJMP, asm.JumpNE, r2, 0, -11),
		mov(r0, 0), exit(),
	)}
	x := compile(t, p, WithRegion(Region{Name: "words", Addr: uintptr(base), Size: 16, Writable: true}))
	add0, cas0 := nativeU64(uintptr(base)), nativeU64(uintptr(base+8))
	const workers = 8
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			if _, err := x.Run(nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := nativeU64(uintptr(base)) - add0; got != workers*n {
		t.Errorf("fetch-add counter advanced by %d, want %d", got, workers*n)
	}
	if got := uint32(nativeU64(uintptr(base+8))) - uint32(cas0); got != workers*n {
		t.Errorf("cmpxchg counter advanced by %d, want %d", got, workers*n)
	}
}

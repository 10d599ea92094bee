package vm

import (
	"sync/atomic"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
)

// atomic32 performs the STX|ATOMIC|W operation op at p with operand v (the
// low 32 bits of src) and returns the old value, zero-extended. For
// CMPXCHG, cmp is r0 (its low 32 bits are compared).
func atomic32(p unsafe.Pointer, op int32, v, cmp uint64) uint64 {
	a := (*uint32)(p)
	x := uint32(v)
	switch op &^ asm.AtomicFetch {
	case asm.AtomicAdd:
		return uint64(atomic.AddUint32(a, x) - x)
	case asm.AtomicOr:
		return uint64(atomic.OrUint32(a, x))
	case asm.AtomicAnd:
		return uint64(atomic.AndUint32(a, x))
	case asm.AtomicXor:
		for {
			old := atomic.LoadUint32(a)
			if atomic.CompareAndSwapUint32(a, old, old^x) {
				return uint64(old)
			}
		}
	case asm.AtomicXchg &^ asm.AtomicFetch:
		return uint64(atomic.SwapUint32(a, x))
	default: // CMPXCHG
		for {
			old := atomic.LoadUint32(a)
			if old != uint32(cmp) {
				return uint64(old)
			}
			if atomic.CompareAndSwapUint32(a, old, x) {
				return uint64(old)
			}
		}
	}
}

// atomic64 is atomic32 for STX|ATOMIC|DW.
func atomic64(p unsafe.Pointer, op int32, v, cmp uint64) uint64 {
	a := (*uint64)(p)
	switch op &^ asm.AtomicFetch {
	case asm.AtomicAdd:
		return atomic.AddUint64(a, v) - v
	case asm.AtomicOr:
		return atomic.OrUint64(a, v)
	case asm.AtomicAnd:
		return atomic.AndUint64(a, v)
	case asm.AtomicXor:
		for {
			old := atomic.LoadUint64(a)
			if atomic.CompareAndSwapUint64(a, old, old^v) {
				return old
			}
		}
	case asm.AtomicXchg &^ asm.AtomicFetch:
		return atomic.SwapUint64(a, v)
	default: // CMPXCHG
		for {
			old := atomic.LoadUint64(a)
			if old != cmp {
				return old
			}
			if atomic.CompareAndSwapUint64(a, old, v) {
				return old
			}
		}
	}
}

// execAtomic runs the atomic instruction in at pc; it updates src (fetch
// forms and XCHG) or r0 (CMPXCHG).
func (m *machine) execAtomic(x *interpExec, pc int, in *insn) error {
	size := uint64(4)
	if in.op.Size() == asm.SizeDW {
		size = 8
	}
	addr := m.regs[in.dst] + uint64(int64(in.off))
	p, err := m.translate(x, addr, size, true)
	if err != nil {
		return x.memFault(pc, "atomic", addr, size, err)
	}
	if addr%size != 0 {
		return x.memFault(pc, "atomic", addr, size, ErrMisaligned)
	}
	v := m.regs[in.src]
	var old uint64
	if size == 4 {
		old = atomic32(p, in.imm, v, m.regs[0])
	} else {
		old = atomic64(p, in.imm, v, m.regs[0])
	}
	switch {
	case in.imm == asm.AtomicCmpXchg:
		m.regs[0] = old
	case in.imm&asm.AtomicFetch != 0:
		m.regs[in.src] = old
	}
	return nil
}

package verifier

import (
	"fmt"
	"math"
	"slices"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
)

type accessMode uint8

const (
	accRead accessMode = iota
	accWrite
	accAtomic
)

func (m accessMode) String() string {
	switch m {
	case accRead:
		return "read"
	case accWrite:
		return "write"
	}
	return "atomic update"
}

func (ck *checker) load(st *state, pc int, ins asm.Instruction) *Error {
	ptr, e := ck.read(st, pc, ins.Src)
	if e != nil {
		return e
	}
	signed := ins.Op.Mode() == asm.ModeMEMSX
	v, e := ck.access(st, pc, ins.Src, ptr, ins.Off, ins.Op.Size().Bytes(), accRead, value{}, signed)
	if e != nil {
		return e
	}
	st.top().regs[ins.Dst] = v
	return nil
}

func (ck *checker) store(st *state, pc int, ins asm.Instruction) *Error {
	ptr, e := ck.read(st, pc, ins.Dst)
	if e != nil {
		return e
	}
	size := ins.Op.Size().Bytes()
	var val value
	if ins.Op.Class() == asm.ClassST {
		val = constVal(uint64(int64(ins.Imm)))
		if size < 8 {
			val = constVal(uint64(int64(ins.Imm)) & (uint64(1)<<(8*size) - 1))
		}
	} else if val, e = ck.read(st, pc, ins.Src); e != nil {
		return e
	}
	if ins.Op.Mode() != asm.ModeAtomic {
		_, e = ck.access(st, pc, ins.Dst, ptr, ins.Off, size, accWrite, val, false)
		return e
	}
	if val.isPtr() {
		return ck.errorf(PointerLeak, pc, "atomic operand %v holds a %s; only numbers may be stored", ins.Src, val.describe(ck))
	}
	if ins.Imm == asm.AtomicCmpXchg {
		r0, e := ck.read(st, pc, asm.R0)
		if e != nil {
			return e
		}
		if r0.isPtr() {
			return ck.errorf(PointerCompare, pc, "cmpxchg compares memory with r0, which holds a %s", r0.describe(ck))
		}
	}
	old, e := ck.access(st, pc, ins.Dst, ptr, ins.Off, size, accAtomic, val, false)
	if e != nil {
		return e
	}
	switch {
	case ins.Imm == asm.AtomicCmpXchg:
		st.top().regs[asm.R0] = old
	case ins.Imm&asm.AtomicFetch != 0:
		st.top().regs[ins.Src] = old
	}
	return nil
}

// loaded is the value read from n plain bytes of memory.
func loaded(n int, signed bool) value {
	if signed {
		return scalarVal(sextScalar(n))
	}
	return scalarVal(widthScalar(n))
}

// access checks a load, store or atomic update of size bytes at ptr+off
// through register reg and returns the value loaded (for reads and
// atomics: the old value).
func (ck *checker) access(st *state, pc int, reg asm.Register, ptr value, off int16, size int, mode accessMode, val value, signed bool) (value, *Error) {
	o := scalarOp(asm.ALUAdd, ptr.s, constScalar(uint64(int64(off))), false)
	if mode == accAtomic && ptr.isPtr() && ptr.k != kCtx {
		// the low bits of the offset must be known zeros (objects
		// start 8-byte aligned)
		if low := uint64(size - 1); o.t.m&low != 0 || o.t.v&low != 0 {
			return value{}, ck.errorf(MisalignedAtomic, pc, "%d-byte atomic update at offset %s through %v (%s) is not aligned to %d bytes", size, rangeText(o), reg, ptr.describe(ck), size)
		}
	}
	switch ptr.k {
	case kScalar, kMapHandle:
		return value{}, ck.errorf(NotAPointer, pc, "%s through %v, which holds a %s, not a pointer", mode, reg, ptr.describe(ck))
	case kMapValueOrNull, kAllocOrNull:
		return value{}, ck.errorf(NullDeref, pc, "%s through %v, which may be null (%s): compare it with 0 first", mode, reg, ptr.describe(ck))
	case kCtx:
		return ck.accessCtx(st, pc, reg, o, size, mode, val, signed)
	case kStack:
		return ck.accessStack(st, pc, reg, ptr, o, size, mode, val, signed)
	case kMapValue, kAlloc:
		limit, what := int64(ptr.idx), "ringbuf record"
		if ptr.k == kMapValue {
			m := ck.maps[ptr.idx]
			limit, what = int64(m.ValueSize), "value of map "+ck.mapName(int(ptr.idx))
			if e := ck.checkMapAccess(pc, int(ptr.idx), mode); e != nil {
				return value{}, e
			}
			if mode != accRead {
				ck.written[ptr.idx] = true
			}
		} else if !st.hasRef(ptr.id) {
			return value{}, ck.errorf(UseAfterRelease, pc, "%s through %v (%s): %s", mode, reg, ptr.describe(ck), unheldWhy)
		}
		if o.smin < 0 || o.smax > limit-int64(size) {
			return value{}, ck.errorf(MemOutOfBounds, pc, "%s of %d bytes at offset %s of a %d-byte %s (through %v: %s)", mode, size, rangeText(o), limit, what, reg, ptr.describe(ck))
		}
		if mode != accRead && val.isPtr() {
			return value{}, ck.errorf(PointerLeak, pc, "stores a %s into a %s", val.describe(ck), what)
		}
		return loaded(size, signed), nil
	}
	return value{}, ck.errorf(UninitRegister, pc, "%v is not initialized", reg)
}

func rangeText(o Scalar) string {
	if o.isConst() {
		return fmt.Sprint(int64(o.constVal()))
	}
	if o.smin == math.MinInt64 || o.smax == math.MaxInt64 {
		return fmt.Sprintf("[%d, %d] (the offset is not bounded: check it against the size first)", o.smin, o.smax)
	}
	return fmt.Sprintf("[%d, %d]", o.smin, o.smax)
}

func (ck *checker) accessCtx(st *state, pc int, reg asm.Register, o Scalar, size int, mode accessMode, val value, signed bool) (value, *Error) {
	ctx := &ck.hook.Context
	if !o.isConst() {
		return value{}, ck.errorf(CtxOutOfLayout, pc, "context %s at a variable offset %s", mode, rangeText(o))
	}
	off := int(int64(o.constVal()))
	if mode == accAtomic {
		return value{}, ck.errorf(CtxAccessDenied, pc, "atomic operations on the context (%s+%d) are not allowed", ctx.Name, off)
	}
	f, elem := ctx.FieldAt(off, size)
	if f == nil {
		if g, _ := ctx.FieldAt(off, 1); g != nil {
			return value{}, ck.errorf(CtxWidth, pc, "%d-byte %s at %s+%d, inside field %s of %d bytes at offset %d: use the field's width", size, mode, ctx.Name, off, g.Name, g.Size, g.Offset)
		}
		return value{}, ck.errorf(CtxOutOfLayout, pc, "%d-byte %s at %s+%d: no field of hook %q is there (context size %d)", size, mode, ctx.Name, off, ck.hook.Name, ctx.Size)
	}
	name := f.Name
	if f.Array > 1 {
		name = fmt.Sprintf("%s[%d]", f.Name, elem)
	}
	if start := f.Offset + elem*f.Size; off != start || size != f.Size {
		return value{}, ck.errorf(CtxWidth, pc, "%d-byte %s at %s+%d, inside field %s (%d bytes at offset %d): use the field's width", size, mode, ctx.Name, off, name, f.Size, start)
	}
	if mode == accRead && f.Access&hook.Read == 0 {
		return value{}, ck.errorf(CtxAccessDenied, pc, "field %s of hook %q may not be read", name, ck.hook.Name)
	}
	if mode == accWrite {
		if f.Access&hook.Write == 0 {
			return value{}, ck.errorf(CtxAccessDenied, pc, "field %s of hook %q is read-only", name, ck.hook.Name)
		}
		if val.isPtr() {
			return value{}, ck.errorf(PointerLeak, pc, "stores a %s into context field %s", val.describe(ck), name)
		}
	}
	ck.noteCtx(name, off, size, mode)
	return loaded(size, signed), nil
}

// noteCtx records a proven context access for Result.Context.
func (ck *checker) noteCtx(name string, off, size int, mode accessMode) {
	i := 0
	for i < len(ck.ctxUse) && ck.ctxUse[i].Offset != off {
		i++
	}
	if i == len(ck.ctxUse) {
		ck.ctxUse = append(ck.ctxUse, CtxAccess{Field: name, Offset: off, Size: size})
	}
	a := &ck.ctxUse[i]
	a.Read = a.Read || mode == accRead
	a.Write = a.Write || mode == accWrite
}

// ctxAccesses returns the recorded context accesses by offset.
func (ck *checker) ctxAccesses() []CtxAccess {
	slices.SortFunc(ck.ctxUse, func(a, b CtxAccess) int { return a.Offset - b.Offset })
	return ck.ctxUse
}

// frameSub returns the subprogram that frame fi runs.
func (ck *checker) frameSub(st *state, fi int) int {
	cs := st.frames[fi].callsite
	if cs < 0 {
		return 0
	}
	return ck.subOf[cs+1+int(ck.insns[cs].Imm)]
}

func (ck *checker) accessStack(st *state, pc int, reg asm.Register, ptr value, o Scalar, size int, mode accessMode, val value, signed bool) (value, *Error) {
	if o.smin < -asm.StackSize || o.smax > int64(-size) {
		return value{}, ck.errorf(StackOutOfBounds, pc, "%d-byte %s at fp%s: the stack is [fp-512, fp)", size, mode, stackRange(o))
	}
	fi := int(ptr.frame)
	fr := &st.frames[fi]
	sp := &ck.subs[ck.frameSub(st, fi)]
	sp.depth = max(sp.depth, int((-o.smin+7)&^7))
	lo := int(o.smin) + asm.StackSize
	hi := int(o.smax) + asm.StackSize + size // exclusive
	exact := o.isConst()
	if mode != accWrite {
		for b := lo; b < hi; b++ {
			if !fr.stk.isInit(b) {
				return value{}, ck.errorf(UninitStack, pc, "%d-byte %s at fp%s reads fp%d, which is not initialized on this path", size, mode, stackRange(o), b-asm.StackSize)
			}
		}
		if mode == accRead && exact && size == 8 && lo%8 == 0 && fr.stk.spilled(lo/8) {
			if v := fr.stk.slot(lo / 8); v.k == kHalves {
				return value{k: kScalar, s: v.whole()}, nil
			}
			return fr.stk.slot(lo / 8), nil
		}
		for i := lo / 8; i <= (hi-1)/8; i++ {
			if fr.stk.spilled(i) && fr.stk.slot(i).isAddr() {
				if v := fr.stk.slot(i); v.k == kReleased {
					return value{}, ck.errorf(UseAfterRelease, pc, "%d-byte %s at fp%s reads a ringbuf record pointer spilled at fp%d, whose record was submitted or discarded at %s", size, mode, stackRange(o), 8*i-asm.StackSize, ck.where(int(v.idx)))
				}
				return value{}, ck.errorf(PointerLeak, pc, "%d-byte %s at fp%s reads part of a %s spilled at fp%d", size, mode, stackRange(o), fr.stk.slot(i).describe(ck), 8*i-asm.StackSize)
			}
		}
		if mode == accRead {
			if c, ok := knownBytes(&fr.stk, lo, size); exact && ok {
				if size < 8 {
					c &= uint64(1)<<(8*size) - 1
					if signed && c&(uint64(1)<<(8*size-1)) != 0 {
						c |= ^(uint64(1)<<(8*size) - 1)
					}
				}
				return value{k: kScalar, s: constScalar(c)}, nil
			}
			if exact && size == 4 && lo%4 == 0 && fr.stk.spilled(lo/8) {
				if v := fr.stk.slot(lo / 8); v.k == kScalar || v.k == kHalves {
					h, hh := v.halves()
					if lo%8 == 4 {
						h = hh
					}
					if signed {
						h = h.sext32()
					}
					return value{k: kScalar, s: h}, nil
				}
			}
			return loaded(size, signed), nil
		}
		// atomic: the bytes become plain numbers
		for i := lo / 8; i <= (hi-1)/8; i++ {
			fr.stk.unspill(i)
		}
		return loaded(size, false), nil
	}
	// write
	if val.isPtr() {
		if !exact || size != 8 || lo%8 != 0 {
			return value{}, ck.errorf(PointerLeak, pc, "a %s may only be spilled whole, to an 8-byte aligned constant stack slot (this is a %d-byte store at fp%s)", val.describe(ck), size, stackRange(o))
		}
		if val.k == kStack && int(val.frame) > fi {
			return value{}, ck.errorf(PointerLeak, pc, "stores a pointer to a callee's stack (%s) into a caller's frame, where it would outlive the callee", val.describe(ck))
		}
	}
	var prev value // what a store of part of a slot leaves in the rest
	if exact && size < 8 && lo/8 == (hi-1)/8 && fr.stk.spilled(lo/8) {
		prev = fr.stk.slot(lo / 8)
	}
	for i := lo / 8; i <= (hi-1)/8; i++ {
		fr.stk.unspill(i)
	}
	if !exact {
		return value{}, nil // bytes may or may not be written: no byte becomes initialized
	}
	for b := lo; b < hi; b++ {
		fr.stk.setInit(b)
	}
	switch {
	case size == 8 && lo%8 == 0:
		fr.stk.setSpill(lo/8, val)
	case size == 4 && lo%4 == 0 && val.k == kScalar:
		// keep both 4-byte numbers of the slot; the other half's bytes
		// stay as initialized as they were
		other := widthScalar(4)
		if prev.k == kScalar || prev.k == kHalves {
			l, h := prev.halves()
			other = l
			if lo%8 == 0 {
				other = h
			}
		}
		hv := halvesVal(other, val.s)
		if lo%8 == 0 {
			hv = halvesVal(val.s, other)
		}
		fr.stk.putSpill(lo/8, hv)
	case size < 8 && lo/8 == (hi-1)/8 && val.k == kScalar:
		// a byte or two (char arrays): keep what is known of each byte
		fr.stk.putSpill(lo/8, storeBytes(prev, lo%8, size, val.s))
	}
	return value{}, nil
}

// knownBytes returns the size bytes at stack byte lo, zero-extended, when
// they lie in one spilled slot whose value knows every bit of them.
func knownBytes(stk *stack, lo, size int) (uint64, bool) {
	if lo/8 != (lo+size-1)/8 || !stk.spilled(lo/8) {
		return 0, false
	}
	v := stk.slot(lo / 8)
	if v.k != kScalar && v.k != kHalves {
		return 0, false
	}
	sh := 8 * uint(lo%8)
	mask := uint64(math.MaxUint64)
	if size < 8 {
		mask = uint64(1)<<(8*size) - 1
	}
	if v.s.t.m>>sh&mask != 0 {
		return 0, false
	}
	return v.s.t.v >> sh & mask, true
}

func stackRange(o Scalar) string {
	if o.isConst() {
		return fmt.Sprintf("%d", int64(o.constVal()))
	}
	if o.smin == math.MinInt64 || o.smax == math.MaxInt64 {
		return fmt.Sprintf("+[%d, %d] (unbounded offset)", o.smin, o.smax)
	}
	return fmt.Sprintf("+[%d, %d]", o.smin, o.smax)
}

// checkArgMem checks that [ptr, ptr+n) is readable memory for a helper
// (initialized, for stack) for every n up to size.umax.
func (ck *checker) checkArgMem(st *state, pc int, reg asm.Register, ptr value, size uint64, what string) *Error {
	switch ptr.k {
	case kMapValueOrNull, kAllocOrNull:
		return ck.errorf(NullDeref, pc, "%v (%s) may be null: compare it with 0 before passing it as %s", reg, ptr.describe(ck), what)
	case kStack, kMapValue, kAlloc:
	default:
		return ck.errorf(BadHelperArg, pc, "%v must point to %d bytes of stack or map memory for %s, but holds a %s", reg, size, what, ptr.describe(ck))
	}
	if size == 0 {
		return nil
	}
	if size > asm.StackSize*64 {
		return ck.errorf(BadHelperArg, pc, "the size of %s is not bounded (up to %d bytes)", what, size)
	}
	// a read of size bytes at offset 0, byte by byte through the common
	// access path, so that messages match loads
	if ptr.k != kStack {
		if _, e := ck.access(st, pc, reg, ptr, 0, int(size), accRead, value{}, false); e != nil {
			e.Msg = what + ": " + e.Msg
			return e
		}
		return nil
	}
	o := ptr.s
	if o.smin < -asm.StackSize || o.smax > -int64(size) {
		return ck.errorf(StackOutOfBounds, pc, "%s: %d bytes at fp%s do not fit in the stack [fp-512, fp)", what, size, stackRange(o))
	}
	fr := &st.frames[ptr.frame]
	sp := &ck.subs[ck.frameSub(st, int(ptr.frame))]
	sp.depth = max(sp.depth, int((-o.smin+7)&^7))
	lo := int(o.smin) + asm.StackSize
	hi := int(o.smax) + asm.StackSize + int(size)
	for b := lo; b < hi; b++ {
		if !fr.stk.isInit(b) {
			return ck.errorf(UninitStack, pc, "%s: %d bytes at fp%s include fp%d, which is not initialized on this path", what, size, stackRange(o), b-asm.StackSize)
		}
		if i := b / 8; fr.stk.spilled(i) && fr.stk.slot(i).isAddr() {
			return ck.errorf(PointerLeak, pc, "%s: %d bytes at fp%s include a %s spilled at fp%d", what, size, stackRange(o), fr.stk.slot(i).describe(ck), 8*i-asm.StackSize)
		}
	}
	return nil
}

// checkMapAccess checks a read, write or atomic update of the memory of a
// value of map mi against what programs may do with the map: .rodata and
// BPF_F_RDONLY_PROG maps are read-only to programs, BPF_F_WRONLY_PROG
// maps write-only (an atomic update both reads and writes).
func (ck *checker) checkMapAccess(pc, mi int, mode accessMode) *Error {
	m := ck.maps[mi]
	if mode != accRead && readOnly(m) {
		why := "it is declared BPF_F_RDONLY_PROG: only the control plane writes it"
		if m.Freeze {
			why = "it holds read-only global data (.rodata, volatile const)"
		}
		return ck.errorf(ReadOnlyMap, pc, "%s of map %s, which programs may only read: %s", mode, ck.mapName(mi), why)
	}
	if mode != accWrite && m.Flags&MapFlagWriteOnlyProg != 0 {
		return ck.errorf(WriteOnlyMap, pc, "%s of map %s, which is declared BPF_F_WRONLY_PROG: programs may only write it", mode, ck.mapName(mi))
	}
	return nil
}

// inObject reports whether pointer p, for every offset it may have, points
// into its object or just past its end. Only then is its address known to
// be non-zero and ordered like its offset: the machine compares addresses
// as unsigned numbers, and an offset that may leave the object could make
// the address wrap around or reach 0.
func (ck *checker) inObject(p value) bool {
	var lo, hi int64
	switch p.k {
	case kStack:
		lo, hi = -asm.StackSize, 0
	case kCtx:
		lo, hi = 0, int64(ck.hook.Context.Size)
	case kMapValue, kMapValueOrNull:
		lo, hi = 0, int64(ck.maps[p.idx].ValueSize)
	case kAlloc, kAllocOrNull:
		lo, hi = 0, int64(p.idx)
	default:
		return false
	}
	return p.s.smin >= lo && p.s.smax <= hi
}

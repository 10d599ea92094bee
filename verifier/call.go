package verifier

import (
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/loader"
)

// callHelper checks a helper call against the hook and the prototype, then
// clobbers r1-r5 and sets r0.
func (ck *checker) callHelper(st *state, pc int, ins asm.Instruction) *Error {
	id := helpers.ID(ins.Imm)
	p := ck.proto(id)
	if p == nil {
		return ck.errorf(UnknownHelper, pc, "helper id %d has no prototype", ins.Imm)
	}
	if !ck.hook.Allows(id) {
		var names []string
		for _, a := range ck.hook.Helpers {
			names = append(names, a.String())
		}
		return ck.errorf(HelperNotAllowed, pc, "hook %q does not allow %s (it allows: %s)", ck.hook.Name, p.Name, strings.Join(names, ", "))
	}
	f := st.top()
	var mapv value
	haveMap := false
	var released []uint32
	var reserveSize uint64
	// bpf_printk formats as many of r3-r5 as its format has conversions:
	// those must be initialized numbers (an uninitialized register holds
	// whatever native code left there, addresses included)
	variadic, fmtWhy := 3, "its format is not known when the program is loaded, so all three value registers are formatted"
	if id == helpers.TracePrintk {
		variadic, fmtWhy = ck.printkValues(st, f)
	}
	for i := 0; i < p.NumArgs(); i++ {
		a := p.Args[i]
		r := asm.R1 + asm.Register(i)
		v := f.regs[r]
		if a == helpers.ArgNone {
			continue
		}
		if a == helpers.ArgAnything && v.k == kUninit {
			if i-2 >= variadic {
				continue // an unused variadic argument (bpf_printk with fewer values)
			}
			return ck.errorf(UninitRegister, pc, "argument %d (%v) of %s is not initialized, but the helper formats it: %s", i+1, r, p.Name, fmtWhy)
		}
		if v.k == kUninit {
			return ck.errorf(UninitRegister, pc, "argument %d (%v) of %s is not initialized", i+1, r, p.Name)
		}
		if v.k == kReleased {
			return ck.errorf(UseAfterRelease, pc, "argument %d (%v) of %s held a ringbuf record that was submitted or discarded at %s", i+1, r, p.Name, ck.where(int(v.idx)))
		}
		bad := func(want string) *Error {
			return ck.errorf(BadHelperArg, pc, "argument %d (%v) of %s must be %s, but holds a %s", i+1, r, p.Name, want, v.describe(ck))
		}
		switch a {
		case helpers.ArgAnything:
			if v.isPtr() {
				return bad("a number (pointers would leak to the log)")
			}
		case helpers.ArgScalar:
			if v.k != kScalar {
				return bad("a number")
			}
		case helpers.ArgConstMapPtr:
			if v.k != kMapHandle {
				return bad("a map (LD_IMM64 map reference)")
			}
			t := ck.maps[v.idx].Type
			ring := id == helpers.RingbufOutput || id == helpers.RingbufReserve
			if ring != (t == MapTypeRingBuf) {
				return ck.errorf(BadHelperArg, pc, "%s cannot be used with map %s of type %d", p.Name, ck.mapName(int(v.idx)), t)
			}
			if (id == helpers.MapUpdateElem || id == helpers.MapDeleteElem) && readOnly(ck.maps[v.idx]) {
				return ck.errorf(ReadOnlyMap, pc, "%s writes map %s, which programs may only read", p.Name, ck.mapName(int(v.idx)))
			}
			mapv, haveMap = v, true
		case helpers.ArgPtrToMapKey, helpers.ArgPtrToMapValue:
			if !haveMap {
				return ck.errorf(BadHelperArg, pc, "prototype of %s has a key or value without a map", p.Name)
			}
			m := ck.maps[mapv.idx]
			n, what := uint64(m.KeySize), fmt.Sprintf("the key of map %s", ck.mapName(int(mapv.idx)))
			if a == helpers.ArgPtrToMapValue {
				n, what = uint64(m.ValueSize), fmt.Sprintf("the value of map %s", ck.mapName(int(mapv.idx)))
			}
			if e := ck.checkArgMem(st, pc, r, v, n, what); e != nil {
				return e
			}
		case helpers.ArgPtrToMem:
			if i+1 >= 5 || p.Args[i+1] != helpers.ArgConstSize {
				return ck.errorf(BadHelperArg, pc, "prototype of %s has memory without a size", p.Name)
			}
			sz := f.regs[r+1]
			if sz.k != kScalar {
				return ck.errorf(BadHelperArg, pc, "argument %d (%v) of %s must be a size, but holds a %s", i+2, r+1, p.Name, sz.describe(ck))
			}
			if e := ck.checkArgMem(st, pc, r, v, sz.s.umax, fmt.Sprintf("argument %d of %s", i+1, p.Name)); e != nil {
				return e
			}
		case helpers.ArgConstSize:
			if v.k != kScalar {
				return bad("a size")
			}
			if i > 0 && p.Args[i-1] == helpers.ArgPtrToMem {
				continue // checked with the pointer
			}
			if !v.s.isConst() || v.s.constVal() == 0 || v.s.constVal() > 1<<28 {
				return bad("a constant size between 1 and 2^28")
			}
			reserveSize = v.s.constVal()
		case helpers.ArgPtrToAllocMem:
			if v.k == kAllocOrNull {
				return ck.errorf(NullDeref, pc, "argument %d (%v) of %s may be null: compare it with 0 first", i+1, r, p.Name)
			}
			if v.k == kAlloc && !st.hasRef(v.id) {
				return ck.errorf(UseAfterRelease, pc, "argument %d (%v) of %s is not a record this path still holds: %s", i+1, r, p.Name, unheldWhy)
			}
			if v.k != kAlloc || !v.s.isConst() || v.s.constVal() != 0 {
				return bad("a record returned by bpf_ringbuf_reserve, unmoved and not yet submitted")
			}
			released = append(released, v.id)
		default:
			return ck.errorf(BadHelperArg, pc, "prototype of %s has an argument type the verifier does not know", p.Name)
		}
	}
	for _, id := range released {
		st.dropRef(id)
		st.update(func(v value) bool { return (v.k == kAlloc || v.k == kAllocOrNull) && v.id == id },
			func(v *value) { *v = value{k: kReleased, idx: int32(pc)} })
	}
	for r := asm.R1; r <= asm.R5; r++ {
		f.regs[r] = value{}
	}
	if haveMap && (id == helpers.MapUpdateElem || id == helpers.MapDeleteElem) {
		ck.written[mapv.idx] = true
	}
	if haveMap && id == helpers.MapLookupElem && lru(ck.maps[mapv.idx].Type) {
		// a lookup in an LRU map moves the entry to the front of the
		// eviction order: what a later update evicts depends on it
		ck.written[mapv.idx] = true
	}
	switch p.Ret {
	case helpers.RetMapValueOrNull:
		if !haveMap {
			return ck.errorf(BadHelperArg, pc, "prototype of %s returns a map value without a map argument", p.Name)
		}
		f.regs[asm.R0] = value{k: kMapValueOrNull, idx: mapv.idx, id: ck.newID(), s: constScalar(0)}
	case helpers.RetAllocMemOrNull:
		if reserveSize == 0 {
			return ck.errorf(BadHelperArg, pc, "prototype of %s returns memory without a constant size", p.Name)
		}
		rid := ck.newID()
		ck.refPC[rid] = pc
		st.refs = append(st.refs, rid)
		f.regs[asm.R0] = value{k: kAllocOrNull, idx: int32(reserveSize), id: rid, s: constScalar(0)}
	default:
		switch id {
		case helpers.GetPrandomU32, helpers.GetSmpProcessorID:
			f.regs[asm.R0] = scalarVal(widthScalar(4))
		default:
			f.regs[asm.R0] = scalarVal(unknownScalar())
		}
	}
	return nil
}

// unheldWhy explains a ringbuf record pointer whose reference the path
// does not hold.
const unheldWhy = "it points to a record that was already submitted or discarded, or to one of several records depending on the path taken (paths that reserved different records were merged); submit or discard each record through the pointer bpf_ringbuf_reserve returned"

// printkValues returns how many of r3-r5 bpf_printk will format, and why:
// the number of conversions of its format when the format lies in frozen
// read-only data (a string literal in .rodata) at a constant offset with
// a constant size, otherwise all three.
func (ck *checker) printkValues(st *state, f *frame) (int, string) {
	unknown := "its format is not known when the program is loaded (not a string literal in read-only data, nor constant bytes on the stack, at a constant place and size), so the helper may format all three value registers (r3-r5): set them, or use a string literal"
	p, n := f.regs[asm.R1], f.regs[asm.R2]
	if !p.s.isConst() || n.k != kScalar || !n.s.isConst() || n.s.constVal() == 0 || n.s.constVal() > asm.StackSize {
		return 3, unknown
	}
	off, size := p.s.constVal(), n.s.constVal()
	var format []byte
	switch p.k {
	case kMapValue:
		value := frozenValue(ck.maps[p.idx])
		if value == nil || off > uint64(len(value)) || size > uint64(len(value))-off {
			return 3, unknown
		}
		format = value[off : off+size]
	case kStack:
		// constant bytes stored on the stack (char fmt[] = "...")
		stk := &st.frames[p.frame].stk
		for k := uint64(0); k < size; k++ {
			b := int(int64(off)+int64(k)) + asm.StackSize
			if b < 0 || b >= asm.StackSize || !stk.isInit(b) || !stk.spilled(b/8) {
				return 3, unknown
			}
			// each byte must be known; the rest of its slot may not be
			v := stk.slot(b / 8)
			sh := 8 * uint(b%8)
			if (v.k != kScalar && v.k != kHalves) || v.s.t.m>>sh&0xff != 0 {
				return 3, unknown
			}
			format = append(format, byte(v.s.t.v>>sh))
		}
	default:
		return 3, unknown
	}
	used := printkConversions(format)
	return used, fmt.Sprintf("its format %q has %d conversion(s)", strings.TrimRight(string(format), "\x00"), used)
}

// printkConversions counts the values bpf_printk formats for format f,
// following the helper's parser: %% prints '%'; a conversion is
// %[-0]*[width][l|ll](d|i|u|x|X|c); the helper stops at the first
// conversion it does not accept, or after three values.
func printkConversions(f []byte) int {
	if len(f) == 0 || f[len(f)-1] != 0 {
		return 0 // the helper refuses the format without formatting
	}
	used := 0
	for i := 0; f[i] != 0; i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if f[i] == '%' {
			continue
		}
		for f[i] == '-' || f[i] == '0' {
			i++
		}
		width := 0
		for f[i] >= '0' && f[i] <= '9' {
			width = width*10 + int(f[i]-'0')
			i++
			if width > 64 {
				return used
			}
		}
		longs := 0
		for f[i] == 'l' && longs < 2 {
			longs++
			i++
		}
		if used == 3 {
			return used
		}
		switch f[i] {
		case 'd', 'i', 'u', 'x', 'X':
		case 'c':
			if longs > 0 {
				return used
			}
		default:
			return used
		}
		used++
	}
	return used
}

// lru reports a map type whose lookups change which entry is evicted next.
func lru(t loader.MapType) bool { return t == MapTypeLRUHash || t == MapTypeLRUPercpuHash }

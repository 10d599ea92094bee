package verifier

import (
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
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
	for i := 0; i < p.NumArgs(); i++ {
		a := p.Args[i]
		r := asm.R1 + asm.Register(i)
		v := f.regs[r]
		if a == helpers.ArgNone || a == helpers.ArgAnything && v.k == kUninit {
			// an unused variadic argument (bpf_printk with fewer values)
			continue
		}
		if v.k == kUninit {
			return ck.errorf(UninitRegister, pc, "argument %d (%v) of %s is not initialized", i+1, r, p.Name)
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
			if v.k != kAlloc || !v.s.isConst() || v.s.constVal() != 0 || !st.hasRef(v.id) {
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
			func(v *value) { *v = scalarVal(unknownScalar()) })
	}
	for r := asm.R1; r <= asm.R5; r++ {
		f.regs[r] = value{}
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

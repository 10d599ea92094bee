package verifier

import "fmt"

// Kind is the type of an abstract register or spilled stack value.
type kind uint8

const (
	kUninit         kind = iota // never written, or clobbered
	kScalar                     // a number; Scalar holds its range
	kCtx                        // pointer into the hook's context; off = Scalar
	kStack                      // pointer into frame `frame`'s stack, off relative to its r10
	kMapHandle                  // the map object of map `mapIdx` (LD_IMM64 map)
	kMapValue                   // pointer into a value of map `mapIdx`
	kMapValueOrNull             // kMapValue or 0, not yet checked; id links copies
	kAlloc                      // ringbuf record of `size` bytes; id is its reference
	kAllocOrNull                // kAlloc or 0, not yet checked
	kReleased                   // a ringbuf record pointer after submit/discard; idx: pc of the release
	kHalves                     // a stack slot holding two 4-byte numbers (see halves.go)
)

// value is the abstract content of a register or a spilled stack slot.
// For pointers, s is the offset from the start of the region.
type value struct {
	k     kind
	frame uint8  // kStack: index of the frame in the call chain
	rel   uint8  // kScalar with an id: how the value relates to the id's number (relCopy, rel32)
	idx   int32  // kMapHandle, kMapValue*: map index; kAlloc*: record size
	id    uint32 // kMapValueOrNull/kAlloc*: null-check and reference id; kScalar: copy id (0: none)
	delta uint32 // rel32: the constant added in 32 bits
	s     Scalar
}

// Linked scalars: the scalars that share an id (non-zero) are functions
// of one unknown number B, so that bounding one bounds the others:
//
//   - relCopy: the value is B (a copy made by a 64-bit move, or by a
//     32-bit move of a value that fits in 32 bits);
//   - rel32: the value is (B + delta) mod 2^32, zero-extended: a 32-bit
//     move (w3 = w2) followed by 32-bit additions or subtractions of
//     constants (w3 += -2), as clang emits for (unsigned)(i - lo) < n.
//
// Every relCopy member of an id has the same bounds, and so has every
// rel32 member with the same delta.
const (
	relCopy uint8 = iota
	rel32
)

// isPtr reports a pointer the program may still use.
func (v value) isPtr() bool { return v.k >= kCtx && v.k <= kAllocOrNull }

// isAddr reports a value whose bits are an address: a pointer, or a record
// pointer after its release. Its bytes may never be read as a number.
func (v value) isAddr() bool { return v.isPtr() || v.k == kReleased }

func (v value) isNullable() bool { return v.k == kMapValueOrNull || v.k == kAllocOrNull }

func scalarVal(s Scalar) value { return value{k: kScalar, s: s} }

func constVal(c uint64) value { return scalarVal(constScalar(c)) }

func (k kind) String() string {
	switch k {
	case kUninit:
		return "uninitialized"
	case kScalar:
		return "scalar"
	case kCtx:
		return "ctx pointer"
	case kStack:
		return "stack pointer"
	case kMapHandle:
		return "map handle"
	case kMapValue:
		return "map value pointer"
	case kMapValueOrNull:
		return "map value pointer or null"
	case kAlloc:
		return "ringbuf record pointer"
	case kAllocOrNull:
		return "ringbuf record pointer or null"
	case kReleased:
		return "released ringbuf record pointer"
	case kHalves:
		return "two 4-byte numbers"
	}
	return "?"
}

// describe renders v for messages: "scalar u[0,15]", "stack pointer fp-8".
func (v value) describe(c *checker) string {
	switch v.k {
	case kUninit:
		return "uninitialized"
	case kScalar:
		return "scalar " + v.s.String()
	case kStack:
		return fmt.Sprintf("stack pointer %s", offString("fp", v.s))
	case kCtx:
		return fmt.Sprintf("ctx pointer %s", offString("ctx", v.s))
	case kMapHandle:
		return fmt.Sprintf("map handle %s", c.mapName(int(v.idx)))
	case kMapValue, kMapValueOrNull:
		return fmt.Sprintf("%s %s (value_size %d)", v.k, offString(c.mapName(int(v.idx)), v.s), c.maps[v.idx].ValueSize)
	case kAlloc, kAllocOrNull:
		return fmt.Sprintf("%s %s (size %d)", v.k, offString("rec", v.s), v.idx)
	case kReleased:
		return fmt.Sprintf("ringbuf record pointer released at %s", c.where(int(v.idx)))
	case kHalves:
		lo, hi := v.halves()
		return fmt.Sprintf("4-byte numbers %s (low) and %s (high)", lo, hi)
	}
	return v.k.String()
}

func offString(base string, s Scalar) string {
	if s.isConst() {
		o := int64(s.constVal())
		if o < 0 {
			return fmt.Sprintf("%s%d", base, o)
		}
		return fmt.Sprintf("%s+%d", base, o)
	}
	return fmt.Sprintf("%s+[%d,%d]", base, s.smin, s.smax)
}

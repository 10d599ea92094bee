package vm

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
)

// The interpreter's memory model: registers hold real addresses, and every
// load, store and atomic must lie entirely inside one known region:
//
//   - the mem buffer given to Run (restricted by WithMemLayout if set);
//   - each live stack frame: the asm.StackSize bytes below its r10;
//   - the regions given with WithRegion, and the whole value array of each
//     map that an LD_IMM64 map-value refers to;
//   - map values returned by helpers whose result is RetMapValueOrNull
//     (value_size bytes of the map whose handle was in r1) and memory
//     returned by RetAllocMemOrNull helpers (r2 bytes), until it is passed
//     to a helper taking ArgPtrToAllocMem.
//
// Anything else, map handles included, traps with ErrMemory. The check is
// the soundness oracle of the verifier: verified programs never trap.

// region is [start, start+size) of readable native memory (outside the Go
// heap: C allocations, mapped map memory). The mem buffer and the stacks,
// which are Go memory, are checked apart and addressed through Go pointers.
type region struct {
	start    uint64
	size     uint64
	writable bool
}

func nativeRegion(start, size uint64, writable bool) region {
	return region{start: start, size: size, writable: writable}
}

// addrPointer turns a native address into a pointer, for the duration of
// one access, without a uintptr-to-pointer conversion that vet would flag:
// the memory is owned by C code, so the garbage collector has nothing to
// track.
func addrPointer(a uint64) unsafe.Pointer {
	p := uintptr(a)
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

// contains reports whether [addr, addr+size) lies inside r.
func (r *region) contains(addr, size uint64) bool {
	off := addr - r.start
	return off < r.size && r.size-off >= size
}

// translate returns a pointer to the size bytes at addr if the access is
// allowed, or the reason it is not.
func (m *machine) translate(x *interpExec, addr, size uint64, write bool) (unsafe.Pointer, error) {
	if off := addr - m.memStart; off < m.memLen && m.memLen-off >= size {
		if x.hasLayout {
			if err := x.checkLayout(off, size, write); err != nil {
				return nil, err
			}
		}
		return unsafe.Add(m.memBase, off), nil
	}
	live := uint64(m.depth+1) * asm.StackSize
	low := m.stackTop() - live
	if off := addr - low; off < live && live-off >= size {
		if off/asm.StackSize != (off+size-1)/asm.StackSize {
			return nil, fmt.Errorf("access straddles two stack frames: %w", ErrMemory)
		}
		return unsafe.Pointer(&m.stack[uint64(len(m.stack))-live+off]), nil
	}
	for i := range x.static {
		if r := &x.static[i]; r.contains(addr, size) {
			return r.pointer(addr, write)
		}
	}
	for i := range m.dyn {
		if r := &m.dyn[i]; r.contains(addr, size) {
			return r.pointer(addr, write)
		}
	}
	return nil, ErrMemory
}

func (r *region) pointer(addr uint64, write bool) (unsafe.Pointer, error) {
	if write && !r.writable {
		return nil, ErrReadOnly
	}
	return addrPointer(addr), nil
}

// checkLayout applies WithMemLayout to an access at offset off of mem: the
// range that contains off is the last one starting at or before it (the
// ranges are sorted and disjoint).
func (x *interpExec) checkLayout(off, size uint64, write bool) error {
	i := sort.Search(len(x.layout), func(i int) bool { return uint64(x.layout[i].Offset) > off }) - 1
	if i < 0 {
		return fmt.Errorf("no field there: %w", ErrMemory)
	}
	r := &x.layout[i]
	if ro := off - uint64(r.Offset); ro >= uint64(r.Size) || uint64(r.Size)-ro < size {
		return fmt.Errorf("not inside one field: %w", ErrMemory)
	}
	switch {
	case write && !r.Writable:
		return ErrReadOnly
	case !write && !r.Readable:
		return fmt.Errorf("read of write-only memory: %w", ErrMemory)
	}
	return nil
}

// addRegion records memory a helper returned. Identical regions are kept
// once, so a loop of lookups does not grow the list.
func (m *machine) addRegion(start, size uint64, writable bool) {
	if size == 0 || start+size < start {
		return
	}
	for i := range m.dyn {
		if r := &m.dyn[i]; r.start == start && r.size == size {
			r.writable = r.writable || writable
			return
		}
	}
	m.dyn = append(m.dyn, nativeRegion(start, size, writable))
}

// dropRegion forgets the helper-returned region that starts at start
// (memory a ringbuf submit or discard gave back).
func (m *machine) dropRegion(start uint64) {
	for i := range m.dyn {
		if m.dyn[i].start == start {
			m.dyn = append(m.dyn[:i], m.dyn[i+1:]...)
			return
		}
	}
}

// load reads size bytes at p in host byte order, zero-extended.
func load(p unsafe.Pointer, size uint64) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	default:
		return *(*uint64)(p)
	}
}

// loadSigned reads size bytes at p, sign-extended to 64 bits.
func loadSigned(p unsafe.Pointer, size uint64) uint64 {
	switch size {
	case 1:
		return uint64(int64(*(*int8)(p)))
	case 2:
		return uint64(int64(*(*int16)(p)))
	case 4:
		return uint64(int64(*(*int32)(p)))
	default:
		return *(*uint64)(p)
	}
}

// store writes the low size bytes of v at p in host byte order.
func store(p unsafe.Pointer, size, v uint64) {
	switch size {
	case 1:
		*(*uint8)(p) = uint8(v)
	case 2:
		*(*uint16)(p) = uint16(v)
	case 4:
		*(*uint32)(p) = uint32(v)
	default:
		*(*uint64)(p) = v
	}
}

// memFault builds the Fault of a refused access.
func (x *interpExec) memFault(pc int, what string, addr, size uint64, err error) error {
	return x.fault(pc, fmt.Sprintf("%s of %d bytes at %#x", what, size, addr), err)
}

// Package execmem holds machine code in memory that is never writable and
// executable at the same time (W^X).
//
// A Block is reserved read-write, filled with one copy of the code, then
// switched to read-execute; it is never made writable again. Free unmaps it.
//
//	b, err := execmem.Reserve(len(code), near) // RW, address known before the code is final
//	... emit code that depends on b.Addr() ...
//	err = b.Seal(code)                         // copy, trim, mprotect RX
//	defer b.Free()
package execmem

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrSealed is returned when a Block is written or sealed a second time.
var ErrSealed = errors.New("execmem: block already sealed")

// ErrFreed is returned when a Block is used after Free.
var ErrFreed = errors.New("execmem: block already freed")

var pageSize = unix.Getpagesize()

// Block is one mapping of code pages.
type Block struct {
	mu     sync.Mutex
	mem    []byte // the whole mapping; nil once freed
	used   int    // bytes of code after Seal
	sealed bool
}

// roundPage rounds n up to a whole number of pages.
func roundPage(n int) int { return (n + pageSize - 1) &^ (pageSize - 1) }

// Reserve maps at least size bytes read-write (never executable). If near is
// not zero, the mapping is placed, when the kernel allows it, within a few
// hundred MiB of near so that the code can reach near with 32-bit relative
// calls; the caller must still check reachability from Addr.
func Reserve(size int, near uintptr) (*Block, error) {
	if size <= 0 {
		return nil, fmt.Errorf("execmem: reserve %d bytes: size must be positive", size)
	}
	n := roundPage(size)
	const prot = unix.PROT_READ | unix.PROT_WRITE
	const flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	for _, hint := range hints(near, n) {
		p, err := unix.MmapPtr(-1, 0, ptr(hint), uintptr(n), prot, flags)
		if err != nil {
			return nil, fmt.Errorf("execmem: mmap %d bytes: %w", n, err)
		}
		addr := uintptr(p)
		if hint == 0 || reachable(addr, n, near) {
			return &Block{mem: unsafe.Slice((*byte)(p), n)}, nil
		}
		if err := unix.MunmapPtr(p, uintptr(n)); err != nil {
			return nil, fmt.Errorf("execmem: munmap of a misplaced reservation: %w", err)
		}
	}
	return nil, fmt.Errorf("execmem: mmap %d bytes: no address found", n)
}

// hints returns the addresses to try, ending with 0 (anywhere).
func hints(near uintptr, n int) []uintptr {
	if near == 0 {
		return []uintptr{0}
	}
	const step = 256 << 20
	base := near &^ uintptr(pageSize-1)
	out := make([]uintptr, 0, 3)
	out = append(out, base+step)
	if base > step+uintptr(n) {
		out = append(out, base-step-uintptr(n))
	}
	return append(out, 0)
}

// reachable reports whether every byte of [addr, addr+n) is within a
// signed 32-bit displacement of target.
func reachable(addr uintptr, n int, target uintptr) bool {
	return Rel32Reachable(addr, target) && Rel32Reachable(addr+uintptr(n), target)
}

// Rel32Reachable reports whether a 32-bit relative displacement from "from"
// reaches "to".
func Rel32Reachable(from, to uintptr) bool {
	d := int64(to) - int64(from)
	return d >= -1<<31 && d < 1<<31
}

// ptr turns an address into a pointer without a direct uintptr→Pointer
// conversion (the address is outside the Go heap).
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// Addr returns the address of the first byte of the block (0 once freed).
func (b *Block) Addr() uintptr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return 0
	}
	return uintptr(unsafe.Pointer(&b.mem[0]))
}

// Cap returns the number of bytes Seal accepts.
func (b *Block) Cap() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mem)
}

// Len returns the size of the sealed code, 0 before Seal.
func (b *Block) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Seal copies code to the start of the block, unmaps the pages it does not
// need and makes the rest read-execute. The block is never writable again.
func (b *Block) Seal(code []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.mem == nil:
		return ErrFreed
	case b.sealed:
		return ErrSealed
	case len(code) == 0:
		return errors.New("execmem: seal: no code")
	case len(code) > len(b.mem):
		return fmt.Errorf("execmem: seal: %d bytes of code do not fit in %d reserved", len(code), len(b.mem))
	}
	copy(b.mem, code) // the rest of the mapping is still the kernel's zero pages
	keep := roundPage(len(code))
	if keep < len(b.mem) {
		if err := unix.MunmapPtr(unsafe.Pointer(&b.mem[keep]), uintptr(len(b.mem)-keep)); err != nil {
			return fmt.Errorf("execmem: seal: trim reservation: %w", err)
		}
		b.mem = b.mem[:keep:keep]
	}
	if err := unix.Mprotect(b.mem, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		return fmt.Errorf("execmem: seal: mprotect read-execute: %w", err)
	}
	b.used = len(code)
	b.sealed = true
	return nil
}

// Code returns the sealed code (read-only memory: writing to it faults).
func (b *Block) Code() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.sealed || b.mem == nil {
		return nil
	}
	return b.mem[:b.used:b.used]
}

// Free unmaps the block. No thread may be executing its code or be about to:
// the caller guarantees quiescence. Free of a freed block returns ErrFreed.
func (b *Block) Free() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return ErrFreed
	}
	err := unix.MunmapPtr(unsafe.Pointer(&b.mem[0]), uintptr(len(b.mem)))
	b.mem = nil
	if err != nil {
		return fmt.Errorf("execmem: free: %w", err)
	}
	return nil
}

// New reserves, fills and seals a block holding code in one step.
func New(code []byte) (*Block, error) {
	b, err := Reserve(len(code), 0)
	if err != nil {
		return nil, err
	}
	if err := b.Seal(code); err != nil {
		_ = b.Free()
		return nil, err
	}
	return b, nil
}

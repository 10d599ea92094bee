package enginetest

// #cgo CFLAGS: -std=gnu11 -O2 -Wall -Wextra
// #cgo LDFLAGS: -lpthread
// #include "enginetest.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Ctx is the context the test programs get in r1: four 64-bit words.
type Ctx struct {
	Key, Val, Flags, Out uint64
}

// CtxSize is the size of Ctx in bytes.
const CtxSize = 32

// Bytes encodes c as the memory a program's r1 points to.
func (c Ctx) Bytes() []byte {
	b := make([]byte, CtxSize)
	binary.LittleEndian.PutUint64(b[0:], c.Key)
	binary.LittleEndian.PutUint64(b[8:], c.Val)
	binary.LittleEndian.PutUint64(b[16:], c.Flags)
	binary.LittleEndian.PutUint64(b[24:], c.Out)
	return b
}

// COp names a plain C operation with the signature of a program entry.
type COp int

// Plain C operations (see enginetest.h).
const (
	CEmpty       COp = C.ET_C_EMPTY
	CArrayLookup COp = C.ET_C_ARRAY_LOOKUP
	CArrayUpdate COp = C.ET_C_ARRAY_UPDATE
	CHashLookup  COp = C.ET_C_HASH_LOOKUP
	CHashUpdate  COp = C.ET_C_HASH_UPDATE
)

// Addr returns the address of the C function of op.
func (op COp) Addr() uintptr { return uintptr(C.et_c_fn(C.int(op))) }

// SetupC (re)creates the plain C array and hash table with entries
// entries (a power of two): array[k] = {k, 0}, and the table holds keys
// 0..entries-1 with value {key, 0}.
func SetupC(entries uint32) error {
	if entries == 0 || entries&(entries-1) != 0 {
		return fmt.Errorf("enginetest: C tables: %d entries is not a power of two", entries)
	}
	if rc := C.et_c_setup(C.uint32_t(entries)); rc != 0 {
		return fmt.Errorf("enginetest: C tables of %d entries: out of memory", entries)
	}
	return nil
}

// CHashGet returns value[0] of key in the plain C hash table.
func CHashGet(key uint64) (uint64, bool) {
	var v C.uint64_t
	ok := C.et_c_hash_get(C.uint64_t(key), &v) != 0
	return uint64(v), ok
}

// Loop calls fn (a program entry or a C operation) n times from C, with
// Ctx{Key: i & mask, Val: i, Flags: flags} on the i-th call, and returns
// the sum of the results.
func Loop(fn uintptr, n, mask, flags uint64) uint64 {
	return uint64(C.et_loop(C.uintptr_t(fn), C.uint64_t(n), C.uint64_t(mask), C.uint64_t(flags)))
}

// TimedLoop is Loop that also returns the CPU time the calling thread
// spent in the loop (time it was descheduled does not count), so that
// measurements on a loaded machine stay meaningful.
func TimedLoop(fn uintptr, n, mask, flags uint64) (sum uint64, cpu time.Duration) {
	var s C.uint64_t
	ns := C.et_timed_loop(C.uintptr_t(fn), C.uint64_t(n), C.uint64_t(mask), C.uint64_t(flags), &s)
	return uint64(s), time.Duration(ns)
}

// Threads runs fn on threads native pthreads (1..64), iters calls each,
// with Ctx{Key: thread index, Val: i}, and returns the sum of the results.
func Threads(fn uintptr, threads int, iters uint64) (uint64, error) {
	var sum C.uint64_t
	if C.et_threads(C.uintptr_t(fn), C.int(threads), C.uint64_t(iters), &sum) != 0 {
		return 0, fmt.Errorf("enginetest: could not start %d threads", threads)
	}
	return uint64(sum), nil
}

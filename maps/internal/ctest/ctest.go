// Package ctest is a C test bridge for package maps: Go test files cannot
// use cgo, so the calls that JIT code makes (helpers through their native
// function pointers), the native multi-threaded hammer and the C benchmark
// loops live here. Only tests import it.
package ctest

// #cgo CFLAGS: -std=gnu11 -O2 -Wall -Wextra
// #cgo LDFLAGS: -lpthread
// #include <stdlib.h>
// #include "ctest.h"
// static uint64_t call5(uintptr_t fn, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
//   return ((ctest_fn)fn)(a1, a2, a3, a4, a5);
// }
// static void *ptr(uintptr_t p) { return (void *)p; }
// static uint64_t atomic_add64(uintptr_t p, uint64_t d) {
//   return __atomic_add_fetch((uint64_t *)p, d, __ATOMIC_SEQ_CST);
// }
import "C"

import (
	"errors"
	"unsafe"
)

// Call calls the native function at fn with five arguments, as JIT code does.
func Call(fn uintptr, a1, a2, a3, a4, a5 uint64) uint64 {
	return uint64(C.call5(C.uintptr_t(fn), C.uint64_t(a1), C.uint64_t(a2), C.uint64_t(a3), C.uint64_t(a4), C.uint64_t(a5)))
}

// Mem is memory outside the Go heap, as programs' stacks are.
type Mem struct {
	Addr uint64
	B    []byte
}

// Alloc returns n zeroed bytes of C memory holding b (when not nil).
func Alloc(n int, b []byte) *Mem {
	p := C.calloc(C.size_t(n+8), 1)
	m := &Mem{Addr: uint64(uintptr(p)), B: unsafe.Slice((*byte)(p), n)}
	copy(m.B, b)
	return m
}

// Free releases m.
func (m *Mem) Free() { C.free(C.ptr(C.uintptr_t(m.Addr))) }

// Bytes returns the n bytes of native memory at addr.
func Bytes(addr uint64, n int) []byte {
	return unsafe.Slice((*byte)(C.ptr(C.uintptr_t(addr))), n)
}

// AtomicAdd64 adds d to the uint64 at addr atomically and returns the sum.
func AtomicAdd64(addr uint64, d uint64) uint64 {
	return uint64(C.atomic_add64(C.uintptr_t(addr), C.uint64_t(d)))
}

// Env names the helper addresses and map handles the hammer and the
// benchmarks use (see ctest.h for the map shapes they need).
type Env struct {
	Lookup, Update, Delete, RingOutput, RingReserve, RingSubmit, RingDiscard, SmpID uintptr
	Array, Hash, LRU, PerCPU, Ring                                                  uintptr
}

func (e *Env) c() C.struct_ctest_env {
	return C.struct_ctest_env{
		lookup: C.uintptr_t(e.Lookup), update: C.uintptr_t(e.Update), del: C.uintptr_t(e.Delete),
		rb_output: C.uintptr_t(e.RingOutput), rb_reserve: C.uintptr_t(e.RingReserve),
		rb_submit: C.uintptr_t(e.RingSubmit), rb_discard: C.uintptr_t(e.RingDiscard), smp_id: C.uintptr_t(e.SmpID),
		array: C.uintptr_t(e.Array), hash: C.uintptr_t(e.Hash), lru: C.uintptr_t(e.LRU),
		percpu: C.uintptr_t(e.PerCPU), ring: C.uintptr_t(e.Ring),
	}
}

// Sizes of the hammer's key spaces.
const (
	MaxThreads    = C.CTEST_MAX_THREADS
	KeysPerThread = C.CTEST_KEYS_PER_THREAD
	Shared        = C.CTEST_SHARED
	LRUKeys       = C.CTEST_LRU_KEYS
)

// ThreadResult is what one hammer thread did and the state it expects.
type ThreadResult struct {
	Ops                               uint64
	ArrayAdds, HashAdds               [Shared]uint64
	PerCPUAdds                        uint64
	HashPresent                       [KeysPerThread]bool
	HashValue, ArrayValue             [KeysPerThread]uint64
	RingSent, RingFull, RingDiscarded uint64
	Errors                            uint64
	FirstError                        string
}

// Hammer runs threads native threads doing mixed operations for
// durationMs milliseconds (see ctest.c).
func Hammer(env *Env, threads int, durationMs uint64) ([]ThreadResult, error) {
	ce := env.c()
	res := (*C.struct_ctest_hammer_result)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_ctest_hammer_result{}))))
	defer C.free(unsafe.Pointer(res))
	if C.ctest_hammer(&ce, C.int(threads), C.uint64_t(durationMs), res) != 0 {
		return nil, errors.New("hammer: could not start the threads")
	}
	out := make([]ThreadResult, threads)
	for i := range out {
		t := &res.t[i]
		o := &out[i]
		o.Ops = uint64(t.ops)
		for j := 0; j < Shared; j++ {
			o.ArrayAdds[j] = uint64(t.array_adds[j])
			o.HashAdds[j] = uint64(t.hash_adds[j])
		}
		o.PerCPUAdds = uint64(t.percpu_adds)
		for k := 0; k < KeysPerThread; k++ {
			o.HashPresent[k] = t.hash_present[k] != 0
			o.HashValue[k] = uint64(t.hash_value[k])
			o.ArrayValue[k] = uint64(t.array_value[k])
		}
		o.RingSent, o.RingFull, o.RingDiscarded = uint64(t.ring_sent), uint64(t.ring_full), uint64(t.ring_discarded)
		o.Errors = uint64(t.errors)
		o.FirstError = C.GoString(&t.first_error[0])
	}
	return out, nil
}

// Churn runs len(churnKeys)/2 churner threads that move their element
// between two keys each, and readers threads that look up the keys in
// persist, in the hash map at handle m (see ctest.h). It returns the failed
// operations and the number of lookups.
func Churn(env *Env, m uintptr, persist, churnKeys []uint64, readers int, durationMs uint64) (bad, lookups uint64) {
	ce := env.c()
	cp := (*C.uint64_t)(C.calloc(C.size_t(len(persist)+len(churnKeys)+1), 8))
	defer C.free(unsafe.Pointer(cp))
	all := unsafe.Slice((*uint64)(unsafe.Pointer(cp)), len(persist)+len(churnKeys))
	copy(all, persist)
	copy(all[len(persist):], churnKeys)
	var n C.uint64_t
	bad = uint64(C.ctest_churn(&ce, C.uintptr_t(m), cp, C.uint32_t(len(persist)),
		(*C.uint64_t)(unsafe.Pointer(&all[len(persist)])), C.int(len(churnKeys)/2), C.int(readers),
		C.uint64_t(durationMs), &n))
	return bad, uint64(n)
}

// BenchNames names the benchmark variants in the order Bench returns them.
var BenchNames = []string{
	"array_lookup/helper", "array_lookup/plain_c", "array_lookup/inline_c",
	"array_update/helper", "array_update/plain_c",
	"hash_lookup/helper", "hash_lookup/plain_c",
	"hash_update/helper", "hash_update/plain_c",
	"lru_lookup/helper", "percpu_lookup/helper",
}

// Bench runs every benchmark variant iters times in one C run and returns
// ns per operation, in BenchNames order. The maps need 1024 entries.
func Bench(env *Env, iters uint64) []float64 {
	ce := env.c()
	var ns [C.CB_COUNT]C.double
	C.ctest_bench(&ce, C.uint64_t(iters), &ns[0])
	out := make([]float64, len(ns))
	for i := range ns {
		out[i] = float64(ns[i])
	}
	return out
}

// Package testhelpers provides native helper functions and native memory
// for the interpreter's tests (cgo cannot be used in _test.go files). It is
// internal to package vm and holds no production code.
package testhelpers

/*
#include <stdint.h>
#include <string.h>

static uint64_t th_values[4][2];   // a "map" of 4 values of 16 bytes
static uint64_t th_array[4];       // an array map: 4 values of 8 bytes
static uint8_t th_ring[64];        // reservable memory

static uint64_t th_unwind(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) { return a1; }
static uint64_t th_sum(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	return a1 + 2*a2 + 3*a3 + 4*a4 + 5*a5;
}
// th_lookup(map, key): the value of key *(uint32_t*)key if it is < 4, else NULL.
static uint64_t th_lookup(uint64_t map, uint64_t key, uint64_t a3, uint64_t a4, uint64_t a5) {
	uint32_t k;
	memcpy(&k, (void *)(uintptr_t)key, sizeof k);
	if (k >= 4) return 0;
	return (uint64_t)(uintptr_t)th_values[k];
}
// th_reserve(map, size, flags): th_ring if size <= 64, else NULL.
static uint64_t th_reserve(uint64_t map, uint64_t size, uint64_t flags, uint64_t a4, uint64_t a5) {
	return size <= sizeof th_ring ? (uint64_t)(uintptr_t)th_ring : 0;
}
static uint64_t th_submit(uint64_t p, uint64_t flags, uint64_t a3, uint64_t a4, uint64_t a5) { return 0; }
// th_read64(p): the 8 bytes at p.
static uint64_t th_read64(uint64_t p, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	uint64_t v;
	memcpy(&v, (void *)(uintptr_t)p, sizeof v);
	return v;
}

static uintptr_t th_addr(int which) {
	switch (which) {
	case 0: return (uintptr_t)th_unwind;
	case 1: return (uintptr_t)th_sum;
	case 2: return (uintptr_t)th_lookup;
	case 3: return (uintptr_t)th_reserve;
	case 4: return (uintptr_t)th_submit;
	case 5: return (uintptr_t)th_read64;
	case 6: return (uintptr_t)th_values;
	case 7: return (uintptr_t)th_array;
	case 8: return (uintptr_t)th_ring;
	}
	return 0;
}
*/
import "C"

// Native helper functions, all `uint64_t f(uint64_t x5)`.
var (
	// Unwind returns its first argument (the conformance "unwind" helper).
	Unwind = uintptr(C.th_addr(0))
	// Sum returns a1 + 2*a2 + 3*a3 + 4*a4 + 5*a5.
	Sum = uintptr(C.th_addr(1))
	// Lookup(map, key) returns the address of Values[*(uint32*)key] (16
	// bytes) if the key is below 4, else 0.
	Lookup = uintptr(C.th_addr(2))
	// Reserve(map, size, flags) returns Ring if size <= RingSize, else 0.
	Reserve = uintptr(C.th_addr(3))
	// Submit(p, flags) returns 0.
	Submit = uintptr(C.th_addr(4))
	// Read64(p) returns the 8 bytes at p.
	Read64 = uintptr(C.th_addr(5))
)

// Native memory.
var (
	// Values is 4 values of ValueSize bytes that Lookup returns.
	Values = uintptr(C.th_addr(6))
	// Array is 4 values of 8 bytes, laid out as an array map.
	Array = uintptr(C.th_addr(7))
	// Ring is RingSize bytes that Reserve returns.
	Ring = uintptr(C.th_addr(8))
)

// Sizes of the native memory.
const (
	ValueSize = 16
	RingSize  = 64
)

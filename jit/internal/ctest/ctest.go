// Package ctest provides native C helpers for the JITs' tests: they log
// their id and arguments so that two engines running the same program can
// be compared call by call. The log is process-global; use it from one
// goroutine at a time.
package ctest

/*
#include <stdint.h>

#define CTEST_LOG_MAX 4096

typedef struct { uint64_t id, a1, a2, a3, a4, a5; } ctest_entry;

static ctest_entry ctest_log[CTEST_LOG_MAX];
static uint64_t ctest_n;

static void ctest_rec(uint64_t id, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	if (ctest_n < CTEST_LOG_MAX) {
		ctest_entry *e = &ctest_log[ctest_n];
		e->id = id; e->a1 = a1; e->a2 = a2; e->a3 = a3; e->a4 = a4; e->a5 = a5;
	}
	ctest_n++;
}

static uint64_t ctest_mix(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	ctest_rec(1, a1, a2, a3, a4, a5);
	return (a1 * 0x9e3779b97f4a7c15ull) ^ (a2 + 3 * a3) ^ (a4 << 7) ^ (a5 >> 3);
}

static uint64_t ctest_sum(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	ctest_rec(2, a1, a2, a3, a4, a5);
	return a1 + a2 + a3 + a4 + a5;
}

// Returns its first argument; registered with UnwindOnZero.
static uint64_t ctest_unwind(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	ctest_rec(5, a1, a2, a3, a4, a5);
	return a1;
}

// Checks that the stack is 16-byte aligned at the call, as the C ABIs
// require (System V, AAPCS64):
// returns 1 if it is, 0 if not (the address of a 16-aligned local tells).
static uint64_t ctest_aligned(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	ctest_rec(7, a1, a2, a3, a4, a5);
	_Alignas(16) volatile char probe[16];
	probe[0] = 0;
	return (((uintptr_t)__builtin_frame_address(0)) & 15) == 0 ? 1 : 0;
}

static uintptr_t ctest_addr(int which) {
	switch (which) {
	case 1: return (uintptr_t)ctest_mix;
	case 2: return (uintptr_t)ctest_sum;
	case 5: return (uintptr_t)ctest_unwind;
	case 7: return (uintptr_t)ctest_aligned;
	}
	return 0;
}

static void ctest_reset(void) { ctest_n = 0; }
static uint64_t ctest_count(void) { return ctest_n; }
static ctest_entry ctest_get(uint64_t i) { return ctest_log[i]; }
*/
import "C"

import (
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Helper ids.
const (
	Mix     helpers.ID = 1 // returns a hash of its five arguments
	Sum     helpers.ID = 2 // returns the sum of its five arguments
	Unwind  helpers.ID = 5 // returns its first argument; UnwindOnZero
	Aligned helpers.ID = 7 // returns 1 when called with a 16-byte aligned stack
)

// Addr returns the native address of helper id (0 if unknown).
func Addr(id helpers.ID) uintptr { return uintptr(C.ctest_addr(C.int(id))) }

// Table returns a helper table with Mix, Sum and Unwind (and Aligned).
func Table() vm.HelperTable {
	t := vm.HelperTable{}
	for _, id := range []helpers.ID{Mix, Sum, Unwind, Aligned} {
		t[id] = vm.Helper{ID: id, Addr: Addr(id), UnwindOnZero: id == Unwind}
	}
	return t
}

// Call is one logged helper call.
type Call struct {
	ID   uint64
	Args [5]uint64
}

// Reset clears the log.
func Reset() { C.ctest_reset() }

// Log returns the calls since the last Reset (at most 4096 are kept) and
// how many were made in all.
func Log() ([]Call, int) {
	n := int(C.ctest_count())
	k := min(n, 4096)
	out := make([]Call, k)
	for i := range out {
		e := C.ctest_get(C.uint64_t(i))
		out[i] = Call{ID: uint64(e.id), Args: [5]uint64{uint64(e.a1), uint64(e.a2), uint64(e.a3), uint64(e.a4), uint64(e.a5)}}
	}
	return out, n
}

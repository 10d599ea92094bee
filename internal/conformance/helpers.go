package conformance

/*
#include <stdint.h>

// The conformance suite's "unwind" helper (id 5): it returns its first
// argument; the engine stops the program with r0 = 0 when that is 0
// (vm.Helper.UnwindOnZero).
uint64_t ncclbpf_conformance_unwind(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	(void)a2; (void)a3; (void)a4; (void)a5;
	return a1;
}
*/
import "C"

import (
	"unsafe"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/vm"
)

// UnwindHelper is the id of the conformance suite's "unwind" helper: it
// returns its first argument, and when that is 0 the program stops at once
// with r0 = 0. "call %rN" (callx) with rN = 5 calls it too.
const UnwindHelper helpers.ID = 5

// Helpers returns the helper table the conformance tests run with. Its
// functions are native C code, as the engines require. The corpus calls no
// other helper (checked by the package's tests).
func Helpers() vm.HelperTable {
	return vm.HelperTable{
		UnwindHelper: {
			ID:           UnwindHelper,
			Addr:         uintptr(unsafe.Pointer(C.ncclbpf_conformance_unwind)),
			UnwindOnZero: true,
		},
	}
}

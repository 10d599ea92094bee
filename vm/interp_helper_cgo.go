package vm

/*
#include <stdint.h>

typedef uint64_t (*ncclbpf_helper_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

// ncclbpf_interp_call calls the native helper at fn with r1..r5.
static uint64_t ncclbpf_interp_call(uintptr_t fn, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	return ((ncclbpf_helper_fn)fn)(a1, a2, a3, a4, a5);
}
*/
import "C"

// callNative calls the helper function at addr (System V ABI, five
// uint64_t arguments, uint64_t result). This trampoline is the only cgo
// code of the interpreter.
func callNative(addr uintptr, a1, a2, a3, a4, a5 uint64) uint64 {
	return uint64(C.ncclbpf_interp_call(C.uintptr_t(addr), C.uint64_t(a1), C.uint64_t(a2), C.uint64_t(a3), C.uint64_t(a4), C.uint64_t(a5)))
}

package arm64

/*
#include <stddef.h>
#include <stdint.h>

// ncclbpf_jit_sync_icache makes freshly written code visible to instruction
// fetch: DC CVAU / IC IVAU over the range plus DSB ISH / ISB, as the
// compiler's builtin emits them for AArch64.
static void ncclbpf_jit_sync_icache(uintptr_t start, size_t len) {
	__builtin___clear_cache((char *)start, (char *)start + len);
}
*/
import "C"

import "golang.org/x/sys/cpu"

// syncICache performs the cache maintenance Arm requires between writing
// code and executing it (the data cache is cleaned to the point of
// unification and the instruction cache invalidated over the range).
func syncICache(addr uintptr, n int) {
	C.ncclbpf_jit_sync_icache(C.uintptr_t(addr), C.size_t(n))
}

// hasLSE reports whether the CPU implements FEAT_LSE (HWCAP_ATOMICS).
func hasLSE() bool { return cpu.ARM64.HasATOMICS }

// Command plugin is libncclbpf.so, NCCL's tuner plugin:
//
//	scripts/build.sh lib build/libncclbpf.so    (make lib)
//	NCCL_TUNER_PLUGIN=$PWD/build/libncclbpf.so NCCLBPF_POLICY=policy.bpf.o ./my_job
//
// The C shim (tuner.c, tuner_abi.c, slot.c) exports ncclTunerPlugin_v2..v7 and runs on
// NCCL's threads; Go only runs once per process, inside the first init, to
// load, verify and compile the policy and publish its entry points to the
// shim's hook slots. docs/environment.md lists the environment variables
// (package envconfig).
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -O2 -std=gnu11 -Wall -Wextra -Wno-unused-parameter
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strings"
	"unsafe"
)

// ncclbpfGoLoad loads the configured policy (once per process, called by
// the shim under pthread_once) and publishes its entries. It writes a
// one-line message for NCCL's log into msg, sets *strict to 1 under
// NCCLBPF_STRICT (0 otherwise), and returns 0 when a policy is running, 1
// when none is configured, -1 when loading failed (NCCL's defaults stay in
// effect, or, strict, the library's inits fail).
//
//export ncclbpfGoLoad
func ncclbpfGoLoad(msg *C.char, n C.size_t, strict *C.int) C.int {
	status, text, st := loadPolicy()
	text = strings.ReplaceAll(text, "\n", "; ") // one line, on stderr and in NCCL's log
	if strict != nil {
		*strict = 0
		if st {
			*strict = 1
		}
	}
	if n > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(msg)), int(n))
		k := copy(b[:len(b)-1], text)
		b[k] = 0
	}
	return C.int(status)
}

// publish installs entry (0: none) in the shim's slot and returns the
// previous entry.
func publish(slot int, entry uintptr) uintptr {
	return uintptr(C.ncclbpf_slot_publish(C.int(slot), C.uintptr_t(entry)))
}

// Slot numbers of the shim (shim.h).
const (
	slotTuner     = C.NCCLBPF_SLOT_TUNER
	slotChunkSize = C.NCCLBPF_SLOT_CHUNK_SIZE
)

func main() {}

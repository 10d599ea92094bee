// Command emptygo is the smallest Go c-shared library that exports a tuner
// plugin symbol: the floor of what any Go plugin adds to a host process
// (the runtime's start, threads and memory), measured beside
// libncclbpf.so by scripts/footprint.sh.
//
//	scripts/build.sh emptygo ART/libemptygo.so
package main

// #include <stdint.h>
// #include <stddef.h>
import "C"

import "unsafe"

// emptygoInit is the tuner's init: one call into Go, which waits for the
// runtime's start as libncclbpf.so's first init does.
//
//export emptygoInit
func emptygoInit(ctx *unsafe.Pointer, comm C.uint64_t, nranks, nnodes C.size_t, log, nvl, consts unsafe.Pointer) C.int {
	*ctx = nil
	return 0
}

func main() {}

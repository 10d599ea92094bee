package main

/*
#include "profiler.h"
*/
import "C"

import (
	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
)

// profNeedFields are the profiler context fields that cost the shim work,
// with the NCCLBPF_PROF_NEED_* bit each one asks for (profiler.h).
var profNeedFields = []struct {
	name string
	need uint32
}{
	{"start_ns", C.NCCLBPF_PROF_NEED_START},
	{"end_ns", C.NCCLBPF_PROF_NEED_END},
	{"duration_ns", C.NCCLBPF_PROF_NEED_START | C.NCCLBPF_PROF_NEED_END},
	{"gpu_duration_ns", C.NCCLBPF_PROF_NEED_CHILDREN},
	{"n_children", C.NCCLBPF_PROF_NEED_CHILDREN},
	{"xfer_bytes", C.NCCLBPF_PROF_NEED_CHILDREN},
	{"local_seq", C.NCCLBPF_PROF_NEED_SEQ},
}

// profNeeds is what the shim must fill of the profiler context for p: the
// NCCLBPF_PROF_NEED_* bits of the fields its verifier result says it reads.
// The shim reads no clock and asks NCCL for no kernel-channel or proxy-step
// events on behalf of a program that reads none of these fields.
func profNeeds(p *bundle.Program) uint32 {
	var n uint32
	for _, f := range profNeedFields {
		if fd := hook.ProfilerContext.Field(f.name); fd != nil && p.ReadsContext(fd.Offset, fd.Size) {
			n |= f.need
		}
	}
	return n
}

package main

/*
#include "profiler.h"
*/
import "C"

import (
	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
)

// profNeedGroups are the profiler context fields that cost the shim work,
// with the NCCLBPF_PROF_NEED_* bits each one asks for (profiler.h).
var profNeedGroups = map[string]uint32{
	"start_ns":        C.NCCLBPF_PROF_NEED_START,
	"end_ns":          C.NCCLBPF_PROF_NEED_END,
	"duration_ns":     C.NCCLBPF_PROF_NEED_START | C.NCCLBPF_PROF_NEED_END,
	"gpu_duration_ns": C.NCCLBPF_PROF_NEED_CHILDREN,
	"n_children":      C.NCCLBPF_PROF_NEED_CHILDREN,
	"xfer_bytes":      C.NCCLBPF_PROF_NEED_CHILDREN,
	"local_seq":       C.NCCLBPF_PROF_NEED_SEQ,
}

// profNeeds is what the shim must fill of the profiler context for p: the
// NCCLBPF_PROF_NEED_* bits of the fields its verifier result says it reads.
// The shim reads no clock and asks NCCL for no kernel-channel or proxy-step
// events on behalf of a program that reads none of these fields.
func profNeeds(p *bundle.Program) uint32 {
	return readGroups(p, &hook.ProfilerContext, profNeedGroups, 0)
}

// readGroups is the union of the fill groups (groups, by field name) of the
// fields of ctx that p reads, as its verifier result lists them; a read field
// that groups does not name adds other. The shims fill, per call, only the
// groups their program's word says it reads.
func readGroups(p *bundle.Program, ctx *hook.Context, groups map[string]uint32, other uint32) uint32 {
	var r uint32
	for _, f := range ctx.Fields {
		if !p.ReadsContext(f.Offset, f.Size*max(f.Array, 1)) {
			continue
		}
		if g, ok := groups[f.Name]; ok {
			r |= g
		} else {
			r |= other
		}
	}
	return r
}

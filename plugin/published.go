package main

/*
#include "shim.h"
#include "profiler.h"
#include "net.h"
*/
import "C"

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
)

// published is what a shim is told of a program it runs: struct
// nb_published (shim.h), its entry and what it reads and writes as far as
// that saves the shim work. publishedRecord makes every one of them.
type published = C.struct_nb_published

// The hint bits of a tuner program's record (shim.h), packed into the slot
// word by ncclbpf_slot_word.
const (
	hintSkipCost   = uint32(C.NCCLBPF_SLOT_SKIP_COST)
	hintSkipMask   = uint32(C.NCCLBPF_SLOT_SKIP_MASK)
	hintNoDecision = uint32(C.NCCLBPF_SLOT_NO_DECISION)
	hintBits       = uint32(C.NCCLBPF_SLOT_FLAGS)
)

// The fill groups of a profiler program's record (profiler.h).
const (
	profNeedStart    = uint32(C.NCCLBPF_PROF_NEED_START)
	profNeedEnd      = uint32(C.NCCLBPF_PROF_NEED_END)
	profNeedChildren = uint32(C.NCCLBPF_PROF_NEED_CHILDREN)
	profNeedSeq      = uint32(C.NCCLBPF_PROF_NEED_SEQ)
)

// The fill groups of a net program's record (net.h).
const (
	netReadIDs    = uint32(C.NCCLBPF_NET_R_IDS)
	netReadBytes  = uint32(C.NCCLBPF_NET_R_BYTES)
	netReadPosted = uint32(C.NCCLBPF_NET_R_POSTED)
	netReadTimes  = uint32(C.NCCLBPF_NET_R_TIMES)
	netReadFlags  = uint32(C.NCCLBPF_NET_R_FLAGS)
	netReadReq    = uint32(C.NCCLBPF_NET_R_REQ)
	netReadConst  = uint32(C.NCCLBPF_NET_R_CONST)
	netReadSeq    = uint32(C.NCCLBPF_NET_R_SEQ)
	netReadAll    = uint32(C.NCCLBPF_NET_R_ALL)
)

// Tuner context inputs the shim can skip filling, and its outputs.
const (
	costOff, costSize = hook.TunerCostOff, 4 * hook.TunerCostCells
	maskOff, maskSize = hook.TunerAvailMaskOff, 4
	// The decision: algorithm, protocol, n_channels (contiguous).
	decisionOff, decisionSize = hook.TunerAlgorithmOff, hook.TunerNChannelsOff + 4 - hook.TunerAlgorithmOff
)

// profNeedGroups are the profiler context fields that cost the shim work,
// with the fill group each one asks for.
var profNeedGroups = map[string]uint32{
	"start_ns":        profNeedStart,
	"end_ns":          profNeedEnd,
	"duration_ns":     profNeedStart | profNeedEnd,
	"gpu_duration_ns": profNeedChildren,
	"n_children":      profNeedChildren,
	"xfer_bytes":      profNeedChildren,
	"local_seq":       profNeedSeq,
}

// netReadGroups maps each field of the net context to the group of fields
// the wrapper fills when a program reads it.
var netReadGroups = map[string]uint32{
	"comm_id": netReadIDs, "peer_key": netReadIDs, "conn_id": netReadIDs, "dev": netReadIDs,
	"bytes": netReadBytes, "posted_bytes": netReadPosted,
	"start_ns": netReadTimes, "end_ns": netReadTimes, "duration_ns": netReadTimes,
	"flags": netReadFlags, "tag": netReadReq, "n": netReadReq,
	"kind": netReadConst, "event": netReadConst, "abi_version": netReadConst, "reserved": netReadConst,
	"local_seq": netReadSeq,
}

// publishedRecord is the record the shim running hook h is given for p
// (nil: no program, the zero record), from the facts the verifier proved
// about p:
//
//   - tuner: hints, NCCLBPF_SLOT_SKIP_COST and _SKIP_MASK for the inputs p
//     never reads, NCCLBPF_SLOT_NO_DECISION when it never writes (nor
//     reads) a decision; its entry must be 8-byte aligned (the hints are
//     packed into the slot word's low bits);
//   - profiler hooks: fill, the NCCLBPF_PROF_NEED_* groups of the fields p
//     reads: the shim reads no clock and asks NCCL for no kernel-channel or
//     proxy-step events for a program that reads none of these fields;
//   - net hooks: fill, the NCCLBPF_NET_R_* groups of the fields p reads (a
//     field with no group, none today, makes it all of them);
//   - tuner/chunk_size: its entry only.
func publishedRecord(h string, p *bundle.Program) (published, error) {
	var r published
	if p == nil {
		return r, nil
	}
	if p.Hook == nil || p.Hook.Name != h {
		return r, fmt.Errorf("program %s: published for hook %s, but verified for another", p.Name, h)
	}
	e := p.Entry()
	r.entry = C.uintptr_t(e)
	switch {
	case h == hook.Tuner || h == hook.TunerChunkSize:
		if uint32(e)&hintBits != 0 {
			return published{}, fmt.Errorf("program %s: entry %#x is not 8-byte aligned", p.Name, e)
		}
		if h == hook.Tuner {
			r.hints = C.uint32_t(tunerHints(p))
		}
	case p.Hook.Context.Name == hook.ProfilerContext.Name:
		r.fill = C.uint32_t(readGroups(p, &hook.ProfilerContext, profNeedGroups, 0))
	case p.Hook.Context.Name == hook.NetContext.Name:
		r.fill = C.uint32_t(readGroups(p, &hook.NetContext, netReadGroups, netReadAll))
	}
	return r, nil
}

// tunerHints are the NCCLBPF_SLOT_* hints of a tuner program p.
func tunerHints(p *bundle.Program) uint32 {
	var h uint32
	if !p.ReadsContext(costOff, costSize) {
		h |= hintSkipCost
	}
	if !p.ReadsContext(maskOff, maskSize) {
		h |= hintSkipMask
	}
	// Outputs the program reads must be reset on every call even when it
	// never writes them (it would see what an earlier program left).
	if !p.WritesContext(decisionOff, decisionSize) && !p.ReadsContext(decisionOff, decisionSize) {
		h |= hintNoDecision
	}
	return h
}

// slotWord is the tuner slot's word for r (ncclbpf_slot_word): its entry
// with its hints packed into the low bits.
func slotWord(r published) uintptr {
	return uintptr(C.ncclbpf_slot_word(&r))
}

// readGroups is the union of the fill groups (groups, by field name) of the
// fields of ctx that p reads, as its verifier result lists them; a read field
// that groups does not name adds other.
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

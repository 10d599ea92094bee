package hook

import "github.com/ncclbpf/ncclbpf/helpers"

// Profiler hook names: each runs when NCCL reports the completion of one
// kind of event (see include/ncclbpf_profiler.h).
const (
	ProfilerCollEnd     = "profiler/coll_end"
	ProfilerP2pEnd      = "profiler/p2p_end"
	ProfilerKernelChEnd = "profiler/kernel_ch_end"
	ProfilerProxyOpEnd  = "profiler/proxy_op_end"
	// ProfilerKernelPhaseEnd runs per barrier phase of a kernel channel
	// (profiler ABI v7, symmetric-memory kernels).
	ProfilerKernelPhaseEnd = "profiler/kernel_phase_end"
)

// ProfilerHookNames lists the profiler hooks in the order of their numeric
// ids in the C shim (NCCLBPF_PROF_COLL_END = 1, ...).
var ProfilerHookNames = []string{ProfilerCollEnd, ProfilerP2pEnd, ProfilerKernelChEnd, ProfilerProxyOpEnd,
	ProfilerKernelPhaseEnd}

// ProfilerHelpers are the helpers profiler programs may call: maps (shared
// with the tuner programs of the bundle), the clock, random numbers, the
// ring buffer and bpf_printk.
var ProfilerHelpers = []helpers.ID{
	helpers.MapLookupElem, helpers.MapUpdateElem, helpers.MapDeleteElem,
	helpers.KtimeGetNs, helpers.GetPrandomU32, helpers.TracePrintk,
	helpers.RingbufOutput, helpers.RingbufReserve, helpers.RingbufSubmit, helpers.RingbufDiscard,
}

var profilerDocs = map[string]string{
	ProfilerCollEnd: "runs once per collective when NCCL has stopped its task event and all its kernel " +
		"channels have stopped; start/end are host CLOCK_MONOTONIC ns, gpu_duration_ns the GPU timer span (ABI v4+); " +
		"a program that reads no completion time, GPU span or n_children runs at the task stop (no channel events asked for)",
	ProfilerP2pEnd: "runs once per send or receive when its task event and kernel channels have stopped " +
		"(at its task stop for a program that reads no completion time, GPU span or n_children)",
	ProfilerKernelChEnd: "runs once per kernel channel of a collective or p2p when NCCL stops it",
	ProfilerProxyOpEnd:  "runs once per proxy operation (network send/receive on one channel) when it stops, with its step count and bytes",
	ProfilerKernelPhaseEnd: "runs once per barrier phase (phase_id: 0 initial sync, 1 compute, 2 final sync) of a kernel channel " +
		"of a symmetric-memory collective when NCCL stops it (profiler ABI v7, NCCL 2.31+; never under v1-v6); " +
		"gpu_duration_ns is the phase's GPU-timer span, the identity fields its collective's",
}

func init() {
	for _, name := range ProfilerHookNames {
		Register(&Hook{
			Name:     name,
			Sections: []string{name},
			Context:  ProfilerContext,
			Helpers:  ProfilerHelpers,
			Return:   Range{Min: 0, Max: 0},
			Doc:      profilerDocs[name],
		})
	}
}

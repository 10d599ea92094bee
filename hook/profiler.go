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

// ProfilerContext is the layout of struct ncclbpf_prof_ctx, shared by all
// profiler hooks. Every field is read-only: profiler programs observe, they
// decide nothing NCCL sees. Identity fields that are the same on every rank
// of a communicator are RankUniform; measurements are RankLocal.
var ProfilerContext = Context{
	Name: "ncclbpf_prof_ctx",
	Size: 152,
	Fields: []Field{
		{Name: "comm_id", Offset: 0, Size: 8, Access: Read, Scope: RankUniform},
		{Name: "seq", Offset: 8, Size: 8, Access: Read, Scope: RankUniform},
		{Name: "local_seq", Offset: 16, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "bytes", Offset: 24, Size: 8, Access: Read, Scope: RankUniform},
		{Name: "rank", Offset: 32, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "n_ranks", Offset: 36, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "func", Offset: 40, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "algorithm", Offset: 44, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "protocol", Offset: 48, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "n_channels", Offset: 52, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "peer", Offset: 56, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "channel_id", Offset: 60, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "start_ns", Offset: 64, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "end_ns", Offset: 72, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "duration_ns", Offset: 80, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "gpu_duration_ns", Offset: 88, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "xfer_bytes", Offset: 96, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "n_children", Offset: 104, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "is_send", Offset: 108, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "event", Offset: 112, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "flags", Offset: 116, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "abi_version", Offset: 120, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "reserved", Offset: 124, Size: 4, Access: Read, Scope: RankUniform},
		// Profiler ABI v7 (NCCL 2.31+): the application's per-call tag, which ranks need not
		// share; the kernel variant and symmetric-kernel flag, which NCCL chooses alike on
		// every rank, as it does the algorithm and protocol.
		{Name: "user_tag", Offset: 128, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "kernel_variant", Offset: 136, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "is_sym_coll", Offset: 140, Size: 4, Access: Read, Scope: RankUniform},
		// Profiler ABI v7's kernel phases: which phase (initial sync, compute, final sync), the
		// same on every rank for the same collective, as the hook id is.
		{Name: "phase_id", Offset: 144, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "reserved2", Offset: 148, Size: 4, Access: Read, Scope: RankUniform},
	},
}

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

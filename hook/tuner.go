package hook

import "github.com/ncclbpf/ncclbpf/helpers"

// Names of the tuner hooks.
const (
	// Tuner runs on every getCollInfo call of NCCL's tuner plugin.
	Tuner = "tuner"
	// TunerChunkSize runs on every getChunkSize call (tuner ABI v6).
	TunerChunkSize = "tuner/chunk_size"
)

// Tuner program return values (NCCLBPF_TUNER_* in include/ncclbpf.h).
const (
	// TunerApply asks the host to apply the outputs written to the context.
	TunerApply = 0
	// TunerDefault asks the host to ignore the outputs.
	TunerDefault = 1
)

// tunerHelpers are the helpers a tuner program may call: maps (for shared
// state and configuration), the clock and random numbers (rank-local: the
// header says so), and bpf_printk. Ring buffers are left to the profiler.
var tunerHelpers = []helpers.ID{
	helpers.MapLookupElem,
	helpers.MapUpdateElem,
	helpers.MapDeleteElem,
	helpers.KtimeGetNs,
	helpers.TracePrintk,
	helpers.GetPrandomU32,
	helpers.GetSmpProcessorID,
}

func init() {
	Register(&Hook{
		Name:     Tuner,
		Sections: []string{"tuner"},
		Context:  TunerContext,
		Helpers:  tunerHelpers,
		Return:   Range{Min: TunerApply, Max: TunerDefault},
		Decides:  true,
		Doc: "NCCL's getCollInfo: choose algorithm, protocol and channel count for one collective " +
			"from NCCL's cost table (float bits as __u32; unavailable cells have bit 31 set). " +
			"Outputs start at -1/-1/0 (leave it to NCCL); return 0 to apply them, 1 to ignore them.",
	})
	Register(&Hook{
		Name:     TunerChunkSize,
		Sections: []string{"tuner/chunk_size"},
		Context:  ChunkContext,
		Helpers:  tunerHelpers,
		Return:   Range{Min: TunerApply, Max: TunerDefault},
		Decides:  true,
		Doc: "NCCL's getChunkSize (tuner v6): set new_chunk_size (bytes, 0 = leave it) for one " +
			"part of a collective task; return 0 to apply it, 1 to ignore it.",
	})
}

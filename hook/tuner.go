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

// TunerCtxSize and ChunkCtxSize are sizeof(struct ncclbpf_tuner_ctx) and
// sizeof(struct ncclbpf_chunk_ctx).
const (
	TunerCtxSize = 160
	ChunkCtxSize = 64
)

// Offsets of the fields of struct ncclbpf_tuner_ctx, the one description
// of its layout in Go: the hook's field table, the offline context
// encoder and the shim's skip flags use them, and
// TestTunerLayoutMatchesHeader checks them against include/ncclbpf.h.
const (
	TunerCommIDOff               = 0   // comm_id
	TunerCallSeqOff              = 8   // call_seq
	TunerNBytesOff               = 16  // n_bytes
	TunerCollTypeOff             = 24  // coll_type
	TunerNumPipeOpsOff           = 28  // num_pipe_ops
	TunerRegBuffOff              = 32  // reg_buff
	TunerNRanksOff               = 36  // n_ranks
	TunerNNodesOff               = 40  // n_nodes
	TunerNvlDomainsOff           = 44  // n_nvl_domains
	TunerMinRanksPerNvlDomainOff = 48  // min_ranks_per_nvl_domain
	TunerMaxRanksPerNvlDomainOff = 52  // max_ranks_per_nvl_domain
	TunerABIVersionOff           = 56  // abi_version
	TunerAvailMaskOff            = 60  // avail_mask
	TunerCostOff                 = 64  // cost
	TunerAlgorithmOff            = 148 // algorithm
	TunerProtocolOff             = 152 // protocol
	TunerNChannelsOff            = 156 // n_channels
	// TunerCostCells is the number of cells of the cost table
	// (NCCLBPF_NUM_ALGORITHMS * NCCLBPF_NUM_PROTOCOLS), 4 bytes each.
	TunerCostCells = 21
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
		Context: Context{
			Name: "ncclbpf_tuner_ctx",
			Size: TunerCtxSize,
			Fields: []Field{
				{Name: "comm_id", Offset: TunerCommIDOff, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "call_seq", Offset: TunerCallSeqOff, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "n_bytes", Offset: TunerNBytesOff, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "coll_type", Offset: TunerCollTypeOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "num_pipe_ops", Offset: TunerNumPipeOpsOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "reg_buff", Offset: TunerRegBuffOff, Size: 4, Access: Read, Scope: RankLocal},
				{Name: "n_ranks", Offset: TunerNRanksOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "n_nodes", Offset: TunerNNodesOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "n_nvl_domains", Offset: TunerNvlDomainsOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "min_ranks_per_nvl_domain", Offset: TunerMinRanksPerNvlDomainOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "max_ranks_per_nvl_domain", Offset: TunerMaxRanksPerNvlDomainOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "abi_version", Offset: TunerABIVersionOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "avail_mask", Offset: TunerAvailMaskOff, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "cost", Offset: TunerCostOff, Size: 4, Access: Read, Scope: RankUniform, Array: TunerCostCells},
				{Name: "algorithm", Offset: TunerAlgorithmOff, Size: 4, Access: Read | Write, Scope: RankUniform},
				{Name: "protocol", Offset: TunerProtocolOff, Size: 4, Access: Read | Write, Scope: RankUniform},
				{Name: "n_channels", Offset: TunerNChannelsOff, Size: 4, Access: Read | Write, Scope: RankUniform},
			},
		},
		Helpers: tunerHelpers,
		Return:  Range{Min: TunerApply, Max: TunerDefault},
		Decides: true,
		Doc: "NCCL's getCollInfo: choose algorithm, protocol and channel count for one collective " +
			"from NCCL's cost table (float bits as __u32; unavailable cells have bit 31 set). " +
			"Outputs start at -1/-1/0 (leave it to NCCL); return 0 to apply them, 1 to ignore them.",
	})
	Register(&Hook{
		Name:     TunerChunkSize,
		Sections: []string{"tuner/chunk_size"},
		Context: Context{
			Name: "ncclbpf_chunk_ctx",
			Size: ChunkCtxSize,
			Fields: []Field{
				{Name: "comm_id", Offset: 0, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "call_seq", Offset: 8, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "n_bytes", Offset: 16, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "chunk_size", Offset: 24, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "coll_type", Offset: 32, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "algorithm", Offset: 36, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "protocol", Offset: 40, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "n_channels", Offset: 44, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "n_ranks", Offset: 48, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "n_nodes", Offset: 52, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "new_chunk_size", Offset: 56, Size: 8, Access: Read | Write, Scope: RankUniform},
			},
		},
		Helpers: tunerHelpers,
		Return:  Range{Min: TunerApply, Max: TunerDefault},
		Decides: true,
		Doc: "NCCL's getChunkSize (tuner v6): set new_chunk_size (bytes, 0 = leave it) for one " +
			"part of a collective task; return 0 to apply it, 1 to ignore it.",
	})
}

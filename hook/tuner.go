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
				{Name: "comm_id", Offset: 0, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "call_seq", Offset: 8, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "n_bytes", Offset: 16, Size: 8, Access: Read, Scope: RankUniform},
				{Name: "coll_type", Offset: 24, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "num_pipe_ops", Offset: 28, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "reg_buff", Offset: 32, Size: 4, Access: Read, Scope: RankLocal},
				{Name: "n_ranks", Offset: 36, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "n_nodes", Offset: 40, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "n_nvl_domains", Offset: 44, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "min_ranks_per_nvl_domain", Offset: 48, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "max_ranks_per_nvl_domain", Offset: 52, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "abi_version", Offset: 56, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "avail_mask", Offset: 60, Size: 4, Access: Read, Scope: RankUniform},
				{Name: "cost", Offset: 64, Size: 4, Access: Read, Scope: RankUniform, Array: 21},
				{Name: "algorithm", Offset: 148, Size: 4, Access: Read | Write, Scope: RankUniform},
				{Name: "protocol", Offset: 152, Size: 4, Access: Read | Write, Scope: RankUniform},
				{Name: "n_channels", Offset: 156, Size: 4, Access: Read | Write, Scope: RankUniform},
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

package hook

// NCCL's numbering of collectives, algorithms and protocols, as
// include/ncclbpf.h and include/ncclbpf_profiler.h define it: a value's
// number is its index. These names are the spellings that the rules
// format, `ncclbpf run` and messages use (lower case, as NCCL's
// environment variables spell them).
var (
	// CollNames are the collectives a tuner decides on (coll_type).
	CollNames = []string{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}
	// FuncNames are the operations a profiler reports (func): the
	// collectives, then point-to-point operations.
	FuncNames = []string{"broadcast", "reduce", "allgather", "reducescatter", "allreduce", "sendrecv", "send", "recv", "alltoall"}
	// AlgoNames are NCCL's algorithms (algorithm).
	AlgoNames = []string{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
	// ProtoNames are NCCL's protocols (protocol).
	ProtoNames = []string{"ll", "ll128", "simple"}
)

// The same values as NCCL itself writes them in its logs ("AllReduce",
// "Ring/Simple"), by number.
var (
	NCCLCollNames  = []string{"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"}
	NCCLAlgoNames  = []string{"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"}
	NCCLProtoNames = []string{"LL", "LL128", "Simple"}
)

// EnumNames returns the names of the values of a context field whose
// values are numbered names, by the field's name in any hook: coll_type,
// func, algorithm, protocol and event (0 is "none", then the profiler
// hooks in ProfilerHookNames' order). It returns nil for other fields.
// An output set to -1 leaves the choice to NCCL; an input of -1 means
// none.
func EnumNames(field string) []string {
	switch field {
	case "coll_type":
		return CollNames
	case "func":
		return FuncNames
	case "algorithm":
		return AlgoNames
	case "protocol":
		return ProtoNames
	case "event":
		return append([]string{"none"}, ProfilerHookNames...)
	}
	return nil
}

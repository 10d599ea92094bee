package control

import (
	"encoding/json"
	"strconv"

	"github.com/ncclbpf/ncclbpf/hook"
)

// OpMetrics is the read-only operation the exporter and the report use:
// Response.Metrics, everything a scrape needs in one round trip. It only
// reads counters that NCCL's threads write; it never waits for them.
const OpMetrics = "metrics"

// MetricsMapPrefix starts the name of a policy map that follows the
// metrics convention (docs/metrics.md): its entries are exported as
// metrics, named after the map and its value's BTF fields.
const MetricsMapPrefix = "metrics_"

// Bounds of the decision counts and latency histograms of one process (the
// shim's tables: metrics.h).
const (
	// MaxMetricsComms bounds Metrics.Comms.
	MaxMetricsComms = 256
	// MaxDecisionRows bounds the decision rows over all communicators.
	MaxDecisionRows = 65536
	// MaxLatencyHists bounds Metrics.Latency.
	MaxLatencyHists = 16384
	// SizeBuckets is the number of size buckets: bucket b holds sizes in
	// (2^(b-1), 2^b] bytes, the last one everything above.
	SizeBuckets = 48
	// LatencyBuckets is the number of latency buckets: bucket i holds
	// latencies of at most 2^(i+LatencyMinLog2) ns, the last one everything
	// above.
	LatencyBuckets = 30
	// LatencyMinLog2 is log2 of the first latency bucket's bound (1.024 µs).
	LatencyMinLog2 = 10
	// LatencyTags is the number of distinct user tags a profiler context
	// keeps histograms for; tasks of further tags count under OtherTag.
	LatencyTags = 16
	// LatencyTaggedHists bounds the histograms of a profiler context with a
	// tag of their own (its table holds 128): tasks of a further tagged key
	// count under OtherTag.
	LatencyTaggedHists = 48
)

// Outcome cells of a decision beyond the 21 full (algorithm, protocol)
// cells, algorithm*3 + protocol.
const (
	CellDefault  = 21 // left to NCCL (DEFAULT, or nothing set)
	CellPartial  = 22 // algorithm or protocol only
	CellRefused  = 23 // dropped by the guardrail
	CellChannels = 24 // channels only
)

// Metrics is everything the exporter serves for one process.
type Metrics struct {
	Info     Info          `json:"info"`
	Tuner    TunerStats    `json:"tuner"`
	Profiler ProfilerStats `json:"profiler"`
	Reload   ReloadStats   `json:"reload"`
	// Config are the policy's `volatile const` values set at load
	// (NCCLBPF_POLICY_CONFIG or the reload's).
	Config map[string]uint64 `json:"config,omitempty"`
	// Comms are the live communicators' counters and decision counts.
	Comms []CommMetrics `json:"comms,omitempty"`
	// Latency are the collective latency histograms of the live profiler
	// contexts.
	Latency []LatencyHist `json:"latency,omitempty"`
	// LatencyOverflow counts tasks whose histogram found no room.
	LatencyOverflow uint64 `json:"latency_overflow,omitempty"`
	// LatencyAlways: NCCLBPF_LATENCY asks NCCL for collective events
	// whatever the policy.
	LatencyAlways bool `json:"latency_always,omitempty"`
	// Cost is the last cost sample taken (`ncclbpf stats --cost`), if any.
	Cost []HookCost `json:"cost,omitempty"`
	// PolicyMaps are the dumps (maps.MapDump as JSON) of the running
	// policy's maps named MetricsMapPrefix...
	PolicyMaps []json.RawMessage `json:"policy_maps,omitempty"`
}

// CommMetrics are one communicator's tuner counters and decision counts.
type CommMetrics struct {
	ID            uint64 `json:"id"`
	Ranks         uint32 `json:"ranks"`
	Nodes         uint32 `json:"nodes"`
	Calls         uint64 `json:"calls"`
	PolicyCalls   uint64 `json:"policy_calls"`
	Applied       uint64 `json:"applied"`
	Rejected      uint64 `json:"rejected"`
	Clamped       uint64 `json:"clamped"`
	ChunkCalls    uint64 `json:"chunk_calls"`
	ChunkApplied  uint64 `json:"chunk_applied"`
	ChunkRejected uint64 `json:"chunk_rejected"`
	// Overflow counts decisions that found no room in the table.
	Overflow  uint64          `json:"overflow,omitempty"`
	Decisions []DecisionCount `json:"decisions,omitempty"`
}

// DecisionCount is how many decisions had one outcome.
type DecisionCount struct {
	Coll       int    `json:"coll"`        // NCCL's collective number
	SizeBucket int    `json:"size_bucket"` // see SizeBuckets
	Cell       int    `json:"cell"`        // algorithm*3+protocol, or Cell*
	Channels   int    `json:"channels"`    // channel count given to NCCL (0: NCCL's), saturated at 255
	Differs    bool   `json:"differs"`     // costlier than NCCL's cheapest available cell
	Count      uint64 `json:"count"`
}

// LatencyHist is the latency histogram of one (communicator, user tag,
// collective, size bucket, algorithm, protocol), as the profiler measured
// it.
type LatencyHist struct {
	Comm       uint64 `json:"comm"`
	Rank       int    `json:"rank"`
	Coll       int    `json:"coll"`
	SizeBucket int    `json:"size_bucket"`
	Algo       int    `json:"algo"`  // -1: NCCL did not say
	Proto      int    `json:"proto"` // -1: NCCL did not say
	// Tag is the application's tag of these collectives (profiler ABI v7,
	// ncclCollConfig_t's userProfilerTag); 0: untagged, as every
	// collective before NCCL 2.31.
	Tag uint64 `json:"tag,omitempty"`
	// OtherTag: tagged collectives whose tag found no room in their
	// context (more than LatencyTags distinct tags, or tagged histograms
	// over LatencyTaggedHists); Tag is then 0.
	OtherTag bool     `json:"other_tag,omitempty"`
	Count    uint64   `json:"count"`
	SumNS    uint64   `json:"sum_ns"`
	Buckets  []uint64 `json:"buckets"` // LatencyBuckets, not cumulative
}

// SizeBucketBytes is the upper bound of size bucket b, in bytes.
func SizeBucketBytes(b int) uint64 {
	if b <= 0 {
		return 1
	}
	if b >= 63 {
		return 1 << 63
	}
	return 1 << uint(b)
}

// LatencyBucketNS is the upper bound of latency bucket i, in nanoseconds.
func LatencyBucketNS(i int) uint64 { return 1 << uint(i+LatencyMinLog2) }

// CollName is the name of NCCL's collective (or operation) number c, as
// hook.FuncNames spells it ("allreduce"), or "op<c>".
func CollName(c int) string {
	if c >= 0 && c < len(hook.FuncNames) {
		return hook.FuncNames[c]
	}
	return "op" + strconv.Itoa(c)
}

// AlgoName and ProtoName name an algorithm or protocol number as
// hook.AlgoNames and hook.ProtoNames do; -1 (NCCL did not say) is
// "unknown".
func AlgoName(a int) string { return enumName(hook.AlgoNames, a) }

// ProtoName: see AlgoName.
func ProtoName(p int) string { return enumName(hook.ProtoNames, p) }

func enumName(names []string, v int) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	if v == -1 {
		return "unknown"
	}
	return strconv.Itoa(v)
}

// CellNames names an outcome cell as (algorithm, protocol): a full cell by
// its names, the others "nccl" (left to NCCL), "partial" (algorithm or
// protocol only), "refused" or "channels" (channels only) in both.
func CellNames(cell int) (algo, proto string) {
	switch {
	case cell >= 0 && cell < CellDefault:
		return AlgoName(cell / 3), ProtoName(cell % 3)
	case cell == CellDefault:
		return "nccl", "nccl"
	case cell == CellPartial:
		return "partial", "partial"
	case cell == CellRefused:
		return "refused", "refused"
	case cell == CellChannels:
		return "channels", "channels"
	}
	return "cell" + strconv.Itoa(cell), "cell" + strconv.Itoa(cell)
}

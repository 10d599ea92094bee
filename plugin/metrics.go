package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "metrics.h"
*/
import "C"

import (
	"encoding/json"
	"strings"
	"sync"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
)

// The metrics operation (control.OpMetrics): counters, decision counts and
// latency histograms copied from the shim's tables (metrics.h), which NCCL's
// threads write without locks; reading them takes the registries' locks
// only, which no NCCL hot path takes.

// The shim's bounds are control's: a difference does not compile (a
// negative constant converted to uint).
const (
	_ = uint(C.NCCLBPF_LAT_TAGS-control.LatencyTags) + uint(control.LatencyTags-C.NCCLBPF_LAT_TAGS)
	_ = uint(C.NCCLBPF_LAT_TAGGED_N-control.LatencyTaggedHists) + uint(control.LatencyTaggedHists-C.NCCLBPF_LAT_TAGGED_N)
	_ = uint(C.NCCLBPF_LAT_BUCKETS-control.LatencyBuckets) + uint(control.LatencyBuckets-C.NCCLBPF_LAT_BUCKETS)
)

var (
	lastCostMu sync.Mutex
	lastCost   []control.HookCost // the last `stats --cost` sample
)

func noteCost(c []control.HookCost) {
	lastCostMu.Lock()
	lastCost = c
	lastCostMu.Unlock()
}

// metricsBuffers are reused between requests (one at a time: the
// control server serves large requests one by one, and this lock keeps
// that true for this one).
var (
	metricsMu   sync.Mutex
	metricComms []C.struct_ncclbpf_comm_counters
	metricRows  []C.struct_ncclbpf_decision_count
	metricLat   []C.struct_ncclbpf_latency_hist
)

func currentMetrics() *control.Metrics {
	st := currentStats()
	m := &control.Metrics{Info: st.Info, Tuner: st.Tuner, Profiler: st.Profiler, Reload: st.Reload,
		LatencyAlways: C.ncclbpf_metrics_latency_enabled() != 0}
	stateMu.Lock()
	if m.Info.Running && len(running.vars) > 0 {
		m.Config = map[string]uint64{}
		for _, v := range running.vars {
			m.Config[v.Name] = v.Value
		}
	}
	stateMu.Unlock()
	lastCostMu.Lock()
	m.Cost = append([]control.HookCost(nil), lastCost...)
	lastCostMu.Unlock()

	metricsMu.Lock()
	defer metricsMu.Unlock()
	if metricComms == nil {
		metricComms = make([]C.struct_ncclbpf_comm_counters, control.MaxMetricsComms)
		metricRows = make([]C.struct_ncclbpf_decision_count, control.MaxDecisionRows)
		metricLat = make([]C.struct_ncclbpf_latency_hist, control.MaxLatencyHists)
	}
	var live C.int
	n := int(C.ncclbpf_metrics_decisions(&metricComms[0], C.int(len(metricComms)), &metricRows[0], C.int(len(metricRows)), &live))
	for _, c := range metricComms[:n] {
		cm := control.CommMetrics{ID: uint64(c.comm_id), Ranks: uint32(c.n_ranks), Nodes: uint32(c.n_nodes),
			Calls: uint64(c.calls), PolicyCalls: uint64(c.policy_calls), Applied: uint64(c.applied),
			Rejected: uint64(c.rejected), Clamped: uint64(c.clamped), ChunkCalls: uint64(c.chunk_calls),
			ChunkApplied: uint64(c.chunk_applied), ChunkRejected: uint64(c.chunk_rejected), Overflow: uint64(c.overflow)}
		for _, r := range metricRows[c.first : c.first+c.n] {
			cm.Decisions = append(cm.Decisions, control.DecisionCount{Coll: int(r.coll), SizeBucket: int(r.size_bucket),
				Cell: int(r.cell), Channels: int(r.channels), Differs: r.differs != 0, Count: uint64(r.count)})
		}
		m.Comms = append(m.Comms, cm)
	}
	var ov C.uint64_t
	nl := int(C.ncclbpf_metrics_latency(&metricLat[0], C.int(len(metricLat)), &ov))
	m.LatencyOverflow = uint64(ov)
	for _, h := range metricLat[:nl] {
		lh := control.LatencyHist{Comm: uint64(h.comm_id), Rank: int(h.rank), Coll: int(h.coll), SizeBucket: int(h.size_bucket),
			Algo: int(h.algo), Proto: int(h.proto), Tag: uint64(h.user_tag), OtherTag: h.other_tag != 0,
			Count: uint64(h.count), SumNS: uint64(h.sum_ns),
			Buckets: make([]uint64, control.LatencyBuckets)}
		b := unsafe.Slice((*C.uint64_t)(unsafe.Pointer(&h.buckets[0])), control.LatencyBuckets)
		for i := range lh.Buckets {
			lh.Buckets[i] = uint64(b[i])
		}
		m.Latency = append(m.Latency, lh)
	}
	m.PolicyMaps = policyMetricMaps()
	return m
}

// policyMetricMaps dumps the running policy's maps that follow the metrics
// convention (named control.MetricsMapPrefix...).
func policyMetricMaps() []json.RawMessage {
	b, err := runningBundle()
	if err != nil {
		return nil
	}
	var out []json.RawMessage
	for _, mp := range b.Maps {
		if !strings.HasPrefix(mp.Name(), control.MetricsMapPrefix) {
			continue
		}
		d, err := maps.Dump(mp)
		if err != nil {
			continue
		}
		if j, err := json.Marshal(d); err == nil {
			out = append(out, j)
		}
	}
	return out
}

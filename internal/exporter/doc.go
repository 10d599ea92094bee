// Package exporter serves the metrics of every ncclbpf process of a node
// to Prometheus: one exporter per node (as node exporters run), which finds
// the processes through their control sockets (package control) at every
// scrape, so that processes that come and go are followed without state.
//
// A scrape asks each process for control.OpMetrics, a read-only operation
// that copies counters the shim's hot path keeps (relaxed per-communicator
// counters and tables, metrics.h in the plugin); nothing runs on NCCL's
// threads for it. The Collector turns the answers into Prometheus metrics
// (see Metrics for the list) with bounded label sets: sizes are power-of-two
// buckets, never a label per size.
//
// Policy-defined metrics follow a convention (docs/metrics.md): a map
// named "metrics_NAME" whose value is a struct is exported field by field,
// as ncclbpf_policy_NAME_FIELD: a field ending in "_total" is a counter,
// an integer array ending in "_hist" a histogram whose bucket i holds
// values up to 2^i (its sum in the sibling field "..._sum"), any other
// integer a gauge; a field in nanoseconds ("_ns", "_ns_hist", "_ns_total")
// is exported in seconds ("_seconds"); the key's integer fields (or the
// integer key, as "key") become labels.
package exporter

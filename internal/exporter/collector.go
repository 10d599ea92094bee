package exporter

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ncclbpf/ncclbpf/control"
)

// Collector is a prometheus.Collector that reads every ncclbpf process of
// a control directory when it is collected.
type Collector struct {
	dir     string
	host    string
	timeout time.Duration
	descs   map[string]*prometheus.Desc
}

// metricDef describes one metric the Collector serves.
type metricDef struct {
	name, help string
	labels     []string
}

var (
	procLabels = []string{"host", "pid"}
	commLabels = []string{"host", "pid", "comm"}
	latLabels  = []string{"host", "pid", "comm", "rank", "collective", "size_bucket", "algorithm", "protocol", "tag"}
	decLabels  = []string{"host", "pid", "comm", "collective", "size_bucket", "algorithm", "protocol", "channels", "not_cheapest"}
)

// Metrics lists the metrics the Collector serves besides the policy-defined
// ones (ncclbpf_policy_*): name, help, labels.
var Metrics = []metricDef{
	{"ncclbpf_exporter_processes", "ncclbpf processes found in the control directory at this scrape", []string{"host"}},
	{"ncclbpf_exporter_process_errors", "processes found that did not answer this scrape (the error is in ncclbpf_exporter_process_error)", []string{"host"}},
	{"ncclbpf_exporter_process_error", "a process that did not answer this scrape, by its error", []string{"host", "pid", "error"}},
	{"ncclbpf_process_info", "a process running the plugin: its executable and control mode", []string{"host", "pid", "exe", "control"}},
	{"ncclbpf_policy_info", "the policy a process runs: name, SHA-256 and attached hooks (1 while running)", []string{"host", "pid", "policy", "sha256", "attached"}},
	{"ncclbpf_policy_loaded_timestamp_seconds", "when the running policy was loaded (Unix time)", procLabels},
	{"ncclbpf_policy_config", "a volatile const value the running policy was loaded with", []string{"host", "pid", "name"}},
	{"ncclbpf_policy_load_status", "the first policy load: 0 loaded, 1 none configured, 2 not yet, negative failed", procLabels},
	{"ncclbpf_reloads_total", "successful reloads", procLabels},
	{"ncclbpf_reload_failures_total", "failed reloads", procLabels},
	{"ncclbpf_communicators", "live communicators (tuner contexts)", procLabels},
	{"ncclbpf_tuner_calls_total", "getCollInfo calls", commLabels},
	{"ncclbpf_tuner_policy_runs_total", "getCollInfo calls that ran the policy", commLabels},
	{"ncclbpf_tuner_decisions_applied_total", "decisions applied (something changed for NCCL)", commLabels},
	{"ncclbpf_tuner_decisions_refused_total", "decisions the guardrail dropped (NCCL's default kept)", commLabels},
	{"ncclbpf_tuner_channels_clamped_total", "channel counts clamped or dropped by the guardrail", commLabels},
	{"ncclbpf_tuner_chunk_calls_total", "getChunkSize calls", commLabels},
	{"ncclbpf_tuner_chunk_sizes_set_total", "chunk sizes the policy set", commLabels},
	{"ncclbpf_tuner_chunk_sizes_refused_total", "chunk sizes the guardrail dropped", commLabels},
	{"ncclbpf_tuner_decision_overflow_total", "decisions not counted in ncclbpf_decisions_total: the communicator's table was full", commLabels},
	{"ncclbpf_decisions_total", "tuner decisions by collective, size bucket (upper bound in bytes, powers of two), outcome (algorithm and protocol, or nccl/partial/refused/channels), channels and whether the cell was costlier than NCCL's cheapest available one", decLabels},
	{"ncclbpf_collective_latency_seconds", "collective latency measured by the profiler hook (GPU span when NCCL gives GPU timestamps, else host span), by collective, size bucket, algorithm, protocol and the application's tag (NCCL 2.31+: hexadecimal, empty when untagged, \"other\" beyond the tags a communicator keeps)", latLabels},
	{"ncclbpf_latency_overflow_total", "profiled collectives not counted in ncclbpf_collective_latency_seconds: a context's table was full", procLabels},
	{"ncclbpf_latency_always", "1 if NCCLBPF_LATENCY asks NCCL for collective events whatever the policy", procLabels},
	{"ncclbpf_profiler_hook_calls_total", "profiler program calls by hook", []string{"host", "pid", "hook"}},
	{"ncclbpf_profiler_events_dropped_total", "profiler events dropped: the context's pool was empty", procLabels},
	{"ncclbpf_profiler_events_forced_total", "profiler tasks completed by the sweep (children missing)", procLabels},
	{"ncclbpf_hook_cost_seconds", "mean cost of a hook's program in the last sampling window (ncclbpf stats --cost)", []string{"host", "pid", "hook"}},
	{"ncclbpf_hook_cost_samples", "calls timed in the last sampling window", []string{"host", "pid", "hook"}},
}

// NewCollector reads the processes of the control directory dir, naming
// this node host, each process bounded by timeout.
func NewCollector(dir, host string, timeout time.Duration) *Collector {
	c := &Collector{dir: dir, host: host, timeout: timeout, descs: map[string]*prometheus.Desc{}}
	for _, m := range Metrics {
		c.descs[m.name] = prometheus.NewDesc(m.name, m.help, m.labels, nil)
	}
	return c
}

// Describe sends nothing: the policy-defined metrics are known only when
// collected, so the Collector is unchecked (client_golang's term).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads every process of the directory and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	procs, errs := c.Read()
	e := &emitter{c: c, ch: ch}
	e.gauge("ncclbpf_exporter_processes", float64(len(procs)+len(errs)), c.host)
	e.gauge("ncclbpf_exporter_process_errors", float64(len(errs)), c.host)
	for _, pe := range errs {
		e.gauge("ncclbpf_exporter_process_error", 1, c.host, strconv.Itoa(pe.PID), pe.Err.Error())
	}
	for _, p := range procs {
		e.process(p)
	}
}

// ProcessError is a process that did not answer.
type ProcessError struct {
	PID int
	Err error
}

// Read asks every process of the directory for its metrics; stale
// sockets (their process is gone) are left out.
func (c *Collector) Read() ([]*control.Metrics, []ProcessError) {
	entries, err := control.Scan(c.dir)
	if err != nil {
		return nil, []ProcessError{{PID: 0, Err: fmt.Errorf("control directory %s: %w", c.dir, err)}}
	}
	var out []*control.Metrics
	var errs []ProcessError
	for _, r := range control.QueryAll(entries, &control.MetricsQuery{}, c.timeout) {
		switch {
		case errors.Is(r.Err, control.ErrStale):
		case r.Err != nil:
			errs = append(errs, ProcessError{r.PID, r.Err})
		case r.Resp == nil || r.Resp.Metrics == nil:
			errs = append(errs, ProcessError{r.PID, errors.New("no metrics in the answer (a plugin without the metrics operation?)")})
		default:
			out = append(out, r.Resp.Metrics)
		}
	}
	return out, errs
}

type emitter struct {
	c  *Collector
	ch chan<- prometheus.Metric
}

func (e *emitter) gauge(name string, v float64, labels ...string) {
	e.send(name, prometheus.GaugeValue, v, labels)
}

func (e *emitter) counter(name string, v uint64, labels ...string) {
	e.send(name, prometheus.CounterValue, float64(v), labels)
}

// send emits one series; label values that are not UTF-8 (a policy path,
// an executable) are repaired, and a series Prometheus refuses is reported
// by the scrape rather than stopping it.
func (e *emitter) send(name string, t prometheus.ValueType, v float64, labels []string) {
	for i, l := range labels {
		labels[i] = strings.ToValidUTF8(l, "\uFFFD")
	}
	m, err := prometheus.NewConstMetric(e.c.descs[name], t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(e.c.descs[name], err)
	}
	e.ch <- m
}

// CommLabel is how a communicator id is written in labels.
func CommLabel(id uint64) string { return fmt.Sprintf("%#x", id) }

// SizeLabel is how size bucket b is written in labels: its upper bound in
// bytes.
func SizeLabel(b int) string { return strconv.FormatUint(control.SizeBucketBytes(b), 10) }

func (e *emitter) process(m *control.Metrics) {
	host, pid := e.c.host, strconv.Itoa(m.Info.PID)
	in := m.Info
	e.gauge("ncclbpf_process_info", 1, host, pid, in.Exe, in.Control)
	if in.Running {
		e.gauge("ncclbpf_policy_info", 1, host, pid, in.Policy, in.SHA256, in.Attached)
		e.gauge("ncclbpf_policy_loaded_timestamp_seconds", float64(in.LoadedAt.UnixNano())/1e9, host, pid)
	}
	names := make([]string, 0, len(m.Config))
	for k := range m.Config {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		e.gauge("ncclbpf_policy_config", float64(m.Config[k]), host, pid, k)
	}
	e.gauge("ncclbpf_policy_load_status", float64(m.Tuner.LoadStatus), host, pid)
	e.counter("ncclbpf_reloads_total", m.Reload.Reloads, host, pid)
	e.counter("ncclbpf_reload_failures_total", m.Reload.Failures, host, pid)
	e.gauge("ncclbpf_communicators", float64(m.Tuner.CommsLive), host, pid)

	// Communicators of one process may share an id (one process driving
	// several GPUs): their series are summed.
	type commSums struct{ v [9]uint64 }
	comms := map[string]*commSums{}
	decs := map[[7]string]uint64{}
	var order []string
	for _, c := range m.Comms {
		id := CommLabel(c.ID)
		s := comms[id]
		if s == nil {
			s = &commSums{}
			comms[id] = s
			order = append(order, id)
		}
		for i, v := range []uint64{c.Calls, c.PolicyCalls, c.Applied, c.Rejected, c.Clamped, c.ChunkCalls, c.ChunkApplied, c.ChunkRejected, c.Overflow} {
			s.v[i] += v
		}
		for _, d := range c.Decisions {
			a, p := control.CellNames(d.Cell)
			decs[[7]string{id, control.CollName(d.Coll), SizeLabel(d.SizeBucket), a, p, strconv.Itoa(d.Channels), strconv.FormatBool(d.Differs)}] += d.Count
		}
	}
	for _, id := range order {
		s := comms[id]
		for i, name := range []string{"ncclbpf_tuner_calls_total", "ncclbpf_tuner_policy_runs_total", "ncclbpf_tuner_decisions_applied_total",
			"ncclbpf_tuner_decisions_refused_total", "ncclbpf_tuner_channels_clamped_total", "ncclbpf_tuner_chunk_calls_total",
			"ncclbpf_tuner_chunk_sizes_set_total", "ncclbpf_tuner_chunk_sizes_refused_total", "ncclbpf_tuner_decision_overflow_total"} {
			e.counter(name, s.v[i], host, pid, id)
		}
	}
	for k, v := range decs {
		e.counter("ncclbpf_decisions_total", v, host, pid, k[0], k[1], k[2], k[3], k[4], k[5], k[6])
	}

	type latSums struct {
		count, sum uint64
		b          []uint64
	}
	lats := map[[7]string]*latSums{}
	for _, l := range m.Latency {
		k := [7]string{CommLabel(l.Comm), strconv.Itoa(l.Rank), control.CollName(l.Coll), SizeLabel(l.SizeBucket),
			control.AlgoName(l.Algo), control.ProtoName(l.Proto), LatencyTagLabel(l)}
		s := lats[k]
		if s == nil {
			s = &latSums{b: make([]uint64, control.LatencyBuckets)}
			lats[k] = s
		}
		s.count += l.Count
		s.sum += l.SumNS
		for i := 0; i < len(l.Buckets) && i < len(s.b); i++ {
			s.b[i] += l.Buckets[i]
		}
	}
	for k, s := range lats {
		// The last bucket holds everything above the one before: it is +Inf.
		buckets := map[float64]uint64{}
		var cum uint64
		for i := 0; i < len(s.b)-1; i++ {
			cum += s.b[i]
			buckets[float64(control.LatencyBucketNS(i))/1e9] = cum
		}
		e.ch <- prometheus.MustNewConstHistogram(e.c.descs["ncclbpf_collective_latency_seconds"], s.count, float64(s.sum)/1e9,
			buckets, host, pid, k[0], k[1], k[2], k[3], k[4], k[5], k[6])
	}
	e.counter("ncclbpf_latency_overflow_total", m.LatencyOverflow, host, pid)
	e.gauge("ncclbpf_latency_always", b2f(m.LatencyAlways), host, pid)

	hooks := make([]string, 0, len(m.Profiler.Calls))
	for h := range m.Profiler.Calls {
		hooks = append(hooks, h)
	}
	sort.Strings(hooks)
	for _, h := range hooks {
		e.counter("ncclbpf_profiler_hook_calls_total", m.Profiler.Calls[h], host, pid, h)
	}
	e.counter("ncclbpf_profiler_events_dropped_total", m.Profiler.EventsDropped, host, pid)
	e.counter("ncclbpf_profiler_events_forced_total", m.Profiler.EventsForced, host, pid)
	for _, hc := range m.Cost {
		e.gauge("ncclbpf_hook_cost_seconds", hc.MeanNS/1e9, host, pid, hc.Hook)
		e.gauge("ncclbpf_hook_cost_samples", float64(hc.Samples), host, pid, hc.Hook)
	}
	for _, raw := range m.PolicyMaps {
		pm, err := ParsePolicyMap(raw)
		if err != nil {
			continue
		}
		for _, pmm := range pm.Metrics() {
			e.ch <- pmm.constMetric(host, pid)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// sanitize makes s a valid metric name part: [a-zA-Z0-9_], lower case.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

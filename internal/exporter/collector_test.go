package exporter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ncclbpf/ncclbpf/control"
)

// serveFake serves a control socket for this process that answers
// OpMetrics with m.
func serveFake(t *testing.T, dir string, m *control.Metrics) {
	t.Helper()
	s, err := control.Listen(dir, os.Getpid(), func(r control.Payload) *control.Response {
		if _, ok := r.(*control.MetricsQuery); !ok {
			return &control.Response{Error: "unknown op " + r.Op()}
		}
		return &control.Response{OK: true, Metrics: m}
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
}

func gather(t *testing.T, c *Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestCollectorFromSocket: the Collector turns one process's answer into
// series: communicators of one id summed, decision outcomes by name, a
// latency histogram with cumulative buckets, a policy map, and an
// executable path that is not UTF-8 repaired rather than a failed scrape.
func TestCollectorFromSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctl")
	lat := control.LatencyHist{Comm: 0x10, Rank: 3, Coll: 4, SizeBucket: 20, Algo: 1, Proto: 2, Count: 5, SumNS: 50000,
		Buckets: make([]uint64, control.LatencyBuckets)}
	lat.Buckets[3], lat.Buckets[4] = 2, 3
	dump, _ := json.Marshal(map[string]any{"name": "metrics_x", "entries": []any{map[string]any{"key": 1, "value": map[string]any{"hits_total": 9}}}})
	m := &control.Metrics{
		Info: control.Info{PID: os.Getpid(), Exe: "/bin/\xffbad", Running: true, Policy: "p.bpf.o", SHA256: "ab", Attached: "tuner=p",
			LoadedAt: time.Unix(100, 0)},
		Config: map[string]uint64{"size_lo": 4096},
		Comms: []control.CommMetrics{
			{ID: 0x10, Calls: 7, Applied: 2, Decisions: []control.DecisionCount{{Coll: 4, SizeBucket: 20, Cell: 5, Differs: true, Count: 2}}},
			{ID: 0x10, Calls: 5, Decisions: []control.DecisionCount{{Coll: 4, SizeBucket: 20, Cell: 5, Differs: true, Count: 1},
				{Coll: 2, SizeBucket: 8, Cell: control.CellDefault, Count: 4}}},
		},
		Latency:    []control.LatencyHist{lat},
		PolicyMaps: []json.RawMessage{dump},
	}
	serveFake(t, dir, m)
	fams := gather(t, NewCollector(dir, "n1", time.Second))

	if f := fams["ncclbpf_tuner_calls_total"]; f == nil || len(f.Metric) != 1 || f.Metric[0].GetCounter().GetValue() != 12 {
		t.Errorf("calls: %v", f)
	}
	dec := fams["ncclbpf_decisions_total"]
	if dec == nil || len(dec.Metric) != 2 {
		t.Fatalf("decisions: %v", dec)
	}
	for _, d := range dec.Metric {
		switch label(d, "collective") {
		case "allreduce":
			if label(d, "algorithm") != "ring" || label(d, "protocol") != "simple" || label(d, "not_cheapest") != "true" ||
				label(d, "size_bucket") != "1048576" || d.GetCounter().GetValue() != 3 {
				t.Errorf("allreduce row: %v", d)
			}
		case "allgather":
			if label(d, "algorithm") != "nccl" || d.GetCounter().GetValue() != 4 {
				t.Errorf("allgather row: %v", d)
			}
		default:
			t.Errorf("row %v", d)
		}
	}
	h := fams["ncclbpf_collective_latency_seconds"]
	if h == nil || len(h.Metric) != 1 {
		t.Fatalf("latency: %v", h)
	}
	hist := h.Metric[0].GetHistogram()
	if hist.GetSampleCount() != 5 || hist.GetSampleSum() != 50e-6 || label(h.Metric[0], "rank") != "3" {
		t.Errorf("histogram: %v", h.Metric[0])
	}
	for _, b := range hist.GetBucket() {
		want := uint64(0)
		switch {
		case b.GetUpperBound() >= 16384e-9:
			want = 5
		case b.GetUpperBound() >= 8192e-9:
			want = 2
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if f := fams["ncclbpf_process_info"]; f == nil || !strings.Contains(label(f.Metric[0], "exe"), "\uFFFD") {
		t.Errorf("process info: %v", f)
	}
	if f := fams["ncclbpf_policy_x_hits_total"]; f == nil || f.Metric[0].GetCounter().GetValue() != 9 {
		t.Errorf("policy map: %v", f)
	}
	if f := fams["ncclbpf_policy_config"]; f == nil || label(f.Metric[0], "name") != "size_lo" || f.Metric[0].GetGauge().GetValue() != 4096 {
		t.Errorf("config: %v", f)
	}
	if f := fams["ncclbpf_exporter_processes"]; f == nil || f.Metric[0].GetGauge().GetValue() != 1 {
		t.Errorf("processes: %v", f)
	}

	// A directory that does not exist: no process, no error; one that is a
	// file: one error series, the scrape still works.
	fams = gather(t, NewCollector(filepath.Join(dir, "none"), "n1", time.Second))
	if f := fams["ncclbpf_exporter_processes"]; f == nil || f.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("empty directory: %v", f)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	fams = gather(t, NewCollector(file, "n1", time.Second))
	if f := fams["ncclbpf_exporter_process_error"]; f == nil || !strings.Contains(label(f.Metric[0], "error"), file) {
		t.Errorf("a file as the directory: %v", f)
	}
}

// TestCollectorLatencyTags: the latency histograms of one key that differ by
// user tag are separate series with the label "tag": hexadecimal, empty for
// an untagged one (as a policy map's user_tag 0), "other" for the
// collectives whose tag found no room; histograms of one key and tag from
// several contexts of a communicator are summed.
func TestCollectorLatencyTags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctl")
	hist := func(tag uint64, other bool, count uint64) control.LatencyHist {
		h := control.LatencyHist{Comm: 0x10, Rank: 1, Coll: 4, SizeBucket: 20, Algo: 1, Proto: 2, Tag: tag, OtherTag: other,
			Count: count, SumNS: 3000 * count, Buckets: make([]uint64, control.LatencyBuckets)}
		h.Buckets[2] = count
		return h
	}
	m := &control.Metrics{
		Info: control.Info{PID: os.Getpid(), Running: true},
		Latency: []control.LatencyHist{hist(0, false, 5), hist(0x11, false, 3), hist(0xabc0000000000001, false, 2),
			hist(0x11, false, 4), hist(0, true, 7)},
	}
	serveFake(t, dir, m)
	fams := gather(t, NewCollector(dir, "n1", time.Second))
	h := fams["ncclbpf_collective_latency_seconds"]
	if h == nil {
		t.Fatal("no latency histograms")
	}
	got := map[string]uint64{}
	for _, s := range h.Metric {
		tagged := false
		for _, l := range s.GetLabel() {
			tagged = tagged || l.GetName() == "tag"
		}
		if !tagged {
			t.Errorf("series without the label tag: %v", s)
		}
		if _, dup := got[label(s, "tag")]; dup {
			t.Errorf("two series of tag %q", label(s, "tag"))
		}
		got[label(s, "tag")] = s.GetHistogram().GetSampleCount()
		if s.GetHistogram().GetSampleSum() != float64(3000*s.GetHistogram().GetSampleCount())/1e9 {
			t.Errorf("tag %q: sum %v for %d", label(s, "tag"), s.GetHistogram().GetSampleSum(), s.GetHistogram().GetSampleCount())
		}
	}
	want := map[string]uint64{"": 5, "0x11": 7, "0xabc0000000000001": 2, OtherTagLabel: 7}
	if len(got) != len(want) {
		t.Fatalf("tags %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tag %q: count %d, want %d", k, got[k], v)
		}
	}
	// The untagged histogram's label is what a policy map's user_tag 0 gives.
	if TagValueLabel(0) != TagLabel("0") || TagValueLabel(0x11) != TagLabel("17") {
		t.Errorf("latency tags %q %q, policy map tags %q %q", TagValueLabel(0), TagValueLabel(0x11), TagLabel("0"), TagLabel("17"))
	}
}

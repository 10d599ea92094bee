package exporter

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func TestPolicyMapConvention(t *testing.T) {
	raw := `{"name":"metrics_peers","type":"hash","entries":[
		{"key":{"peer":3,"dir":"send"},"value":{"bytes_total":4096,"inflight":2,"wait_ns_hist":[1,0,2,5],"wait_ns_sum":77,"note":"x"}}]}`
	pm, err := ParsePolicyMap([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]PolicyMetric{}
	for _, m := range pm.Metrics() {
		got[m.Name] = m
	}
	if m := got["ncclbpf_policy_peers_bytes_total"]; m.Kind != "counter" || m.Value != 4096 || m.Labels["peer"] != "3" || m.Labels["dir"] != "send" {
		t.Errorf("counter: %+v", m)
	}
	if m := got["ncclbpf_policy_peers_inflight"]; m.Kind != "gauge" || m.Value != 2 {
		t.Errorf("gauge: %+v", m)
	}
	h := got["ncclbpf_policy_peers_wait_seconds"]
	if h.Kind != "histogram" || h.Count != 8 || h.Sum != 77e-9 || len(h.Buckets) != 3 || h.Buckets[1e-9] != 1 || h.Buckets[2e-9] != 1 || h.Buckets[4e-9] != 3 {
		t.Errorf("histogram: %+v", h)
	}
	if _, ok := got["ncclbpf_policy_peers_wait_seconds_sum"]; ok || len(got) != 3 {
		t.Errorf("series: %v", got)
	}
	for _, bad := range []string{`{"name":"latency","entries":[]}`, `{"name":"metrics_","entries":[]}`, `not json`} {
		if _, err := ParsePolicyMap([]byte(bad)); err == nil || !strings.Contains(err.Error(), "policy map") {
			t.Errorf("%s: err %v", bad, err)
		}
	}
}

// TestPolicyMapOddNames: key fields named like Prometheus's reserved labels
// are renamed, and names it refuses give an invalid metric, not a panic.
func TestPolicyMapOddNames(t *testing.T) {
	raw := `{"name":"metrics_odd","entries":[{"key":{"le":1,"pid":2,"9x":3},"value":{"n_total":1,"h_hist":[1,2]}}]}`
	pm, err := ParsePolicyMap([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	ms := pm.Metrics()
	if len(ms) != 2 {
		t.Fatalf("%+v", ms)
	}
	for _, m := range ms {
		if m.Labels["key_le"] != "1" || m.Labels["key_pid"] != "2" || m.Labels["key_9x"] != "3" || len(m.Labels) != 3 {
			t.Errorf("labels %v", m.Labels)
		}
		var out dto.Metric
		if err := m.constMetric("h", "1").Write(&out); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
	bad := PolicyMetric{Map: "odd", Name: "ncclbpf_policy_odd_x", Kind: "gauge", Labels: map[string]string{"host": "1"}} // a duplicate label name
	var out dto.Metric
	if err := bad.constMetric("h", "1").Write(&out); err == nil || !strings.Contains(err.Error(), "metrics_odd") {
		t.Errorf("a duplicate label name gave %v", err)
	}
}

// TestPolicyMapTagLabel: a key field user_tag becomes the label "tag", in
// hexadecimal, empty (absent for Prometheus) for 0 = untagged; a field named
// otherwise keeps its name.
func TestPolicyMapTagLabel(t *testing.T) {
	raw := `{"name":"metrics_phase","entries":[
		{"key":{"user_tag":42,"coll":4},"value":{"calls_total":3}},
		{"key":{"user_tag":0,"coll":4},"value":{"calls_total":5}},
		{"key":{"user_tag":18446744073709551615,"coll":4},"value":{"calls_total":1}}]}`
	pm, err := ParsePolicyMap([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]float64{}
	for _, m := range pm.Metrics() {
		if _, ok := m.Labels["user_tag"]; ok {
			t.Errorf("user_tag kept as a label: %v", m.Labels)
		}
		if m.Labels["coll"] != "4" {
			t.Errorf("labels %v", m.Labels)
		}
		tags[m.Labels["tag"]] = m.Value
		var out dto.Metric
		if err := m.constMetric("h", "1").Write(&out); err != nil {
			t.Fatal(err)
		}
		if m.Labels["tag"] == "" {
			for _, l := range out.GetLabel() {
				if l.GetName() == "tag" && l.GetValue() != "" {
					t.Errorf("untagged series has tag %q", l.GetValue())
				}
			}
		}
	}
	want := map[string]float64{"0x2a": 3, "": 5, "0xffffffffffffffff": 1}
	if len(tags) != len(want) {
		t.Fatalf("tags %v, want %v", tags, want)
	}
	for k, v := range want {
		if tags[k] != v {
			t.Errorf("tag %q: %v, want %v", k, tags[k], v)
		}
	}
}

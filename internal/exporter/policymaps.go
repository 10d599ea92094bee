package exporter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ncclbpf/ncclbpf/control"
)

// PolicyMap is a policy map that follows the metrics convention (the
// package documentation), decoded from its dump.
type PolicyMap struct {
	Name    string // without control.MetricsMapPrefix
	Entries []PolicyEntry
}

// PolicyEntry is one entry: its labels (from the key) and value fields.
type PolicyEntry struct {
	Labels map[string]string
	Fields map[string]any // json.Number or []any of json.Number
}

// ParsePolicyMap decodes a map dump (maps.MapDump as JSON).
func ParsePolicyMap(raw []byte) (*PolicyMap, error) {
	var d struct {
		Name    string `json:"name"`
		Entries []struct {
			Key   any `json:"key"`
			Value any `json:"value"`
		} `json:"entries"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("policy map dump: %w", err)
	}
	name, ok := strings.CutPrefix(d.Name, control.MetricsMapPrefix)
	if !ok || name == "" {
		return nil, fmt.Errorf("policy map %q: not named %sNAME", d.Name, control.MetricsMapPrefix)
	}
	pm := &PolicyMap{Name: sanitize(name)}
	for _, en := range d.Entries {
		fields, ok := en.Value.(map[string]any)
		if !ok {
			continue // not a struct: nothing named to export
		}
		pe := PolicyEntry{Labels: map[string]string{}, Fields: fields}
		switch k := en.Key.(type) {
		case json.Number:
			pe.Labels["key"] = k.String()
		case map[string]any:
			for f, v := range k {
				switch v := v.(type) {
				case json.Number:
					if f == UserTagField {
						pe.Labels["tag"] = TagLabel(v)
						continue
					}
					pe.Labels[labelName(f)] = v.String()
				case string:
					pe.Labels[labelName(f)] = v
				}
			}
		case string:
			pe.Labels["key"] = k
		}
		pm.Entries = append(pm.Entries, pe)
	}
	return pm, nil
}

// UserTagField is the key field that becomes the label "tag": the profiler
// context's user_tag (profiler ABI v7, ncclCollConfig_t's userProfilerTag),
// which a policy copies into a metrics map's key to split its series by the
// application's tag (a training phase, a layer).
const UserTagField = "user_tag"

// TagLabel is how a user tag is written as the "tag" label: hexadecimal
// ("0x2a"), and empty for 0, NCCL's "untagged" (Prometheus treats an empty
// label as absent: untagged series carry no tag), as for NCCL releases
// before 2.31, which give none.
func TagLabel(v json.Number) string {
	u, err := strconv.ParseUint(v.String(), 10, 64)
	if err != nil {
		return v.String()
	}
	return TagValueLabel(u)
}

// TagValueLabel is TagLabel of the tag u.
func TagValueLabel(u uint64) string {
	if u == 0 {
		return ""
	}
	return "0x" + strconv.FormatUint(u, 16)
}

// OtherTagLabel is the "tag" label of the shim's latency histogram that
// holds the tagged collectives whose tag found no room in their profiler
// context (control.LatencyHist.OtherTag). Tags are written in hexadecimal:
// no tag is written this way.
const OtherTagLabel = "other"

// LatencyTagLabel is the "tag" label of a latency histogram of the shim:
// as a policy map's user_tag (TagValueLabel: empty when untagged), or
// OtherTagLabel.
func LatencyTagLabel(l control.LatencyHist) string {
	if l.OtherTag {
		return OtherTagLabel
	}
	return TagValueLabel(l.Tag)
}

// PolicyMetric is one series of a policy map.
type PolicyMetric struct {
	Map     string // the map's name
	Name    string
	Kind    string // "counter", "gauge" or "histogram"
	Labels  map[string]string
	Value   float64
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64 // cumulative, the last (+Inf) left out
}

// Metrics lists the map's series, by name then labels.
func (pm *PolicyMap) Metrics() []PolicyMetric {
	var out []PolicyMetric
	for _, e := range pm.Entries {
		for f, v := range e.Fields {
			name, scale := metricName(pm.Name, f)
			switch v := v.(type) {
			case json.Number:
				if base, ok := strings.CutSuffix(f, "_sum"); ok {
					if _, isHist := e.Fields[base+"_hist"].([]any); isHist {
						continue // the histogram's sum
					}
				}
				x, err := v.Float64()
				if err != nil {
					continue
				}
				kind := "gauge"
				if strings.HasSuffix(f, "_total") {
					kind = "counter"
				}
				out = append(out, PolicyMetric{Map: pm.Name, Name: name, Kind: kind, Labels: e.Labels, Value: x * scale})
			case []any:
				base, ok := strings.CutSuffix(f, "_hist")
				if !ok {
					continue
				}
				hname, hscale := metricName(pm.Name, base)
				pmt := PolicyMetric{Map: pm.Name, Name: hname, Kind: "histogram", Labels: e.Labels, Buckets: map[float64]uint64{}}
				var cum uint64
				for i, b := range v {
					n, ok := b.(json.Number)
					if !ok {
						continue
					}
					x, err := n.Float64()
					if err != nil || x < 0 {
						continue
					}
					cum += uint64(x)
					if i < len(v)-1 {
						pmt.Buckets[math.Ldexp(1, i)*hscale] = cum
					}
				}
				pmt.Count = cum
				if s, ok := e.Fields[base+"_sum"].(json.Number); ok {
					pmt.Sum, _ = s.Float64()
					pmt.Sum *= hscale
				}
				out = append(out, pmt)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return fmt.Sprint(out[i].Labels) < fmt.Sprint(out[j].Labels)
	})
	return out
}

// metricName is the name of field f of map m, and the factor its values
// are multiplied by: a field in nanoseconds (name ending "_ns", or "_ns_"
// before "total") is exported in seconds, Prometheus's base unit.
func metricName(m, f string) (string, float64) {
	f = sanitize(f)
	scale := 1.0
	if base, ok := strings.CutSuffix(f, "_ns"); ok {
		f, scale = base+"_seconds", 1e-9
	} else if base, ok := strings.CutSuffix(f, "_ns_total"); ok {
		f, scale = base+"_seconds_total", 1e-9
	}
	return "ncclbpf_policy_" + m + "_" + f, scale
}

func (m PolicyMetric) constMetric(host, pid string) prometheus.Metric {
	names := []string{"host", "pid"}
	vals := []string{host, pid}
	keys := make([]string, 0, len(m.Labels))
	for k := range m.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		names = append(names, k)
		vals = append(vals, m.Labels[k])
	}
	desc := prometheus.NewDesc(m.Name, "policy-defined "+m.Kind+" of map "+control.MetricsMapPrefix+m.Map, names, nil)
	var pm prometheus.Metric
	var err error
	switch m.Kind {
	case "counter":
		pm, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, m.Value, vals...)
	case "histogram":
		pm, err = prometheus.NewConstHistogram(desc, m.Count, m.Sum, m.Buckets, vals...)
	default:
		pm, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.Value, vals...)
	}
	if err != nil {
		// A map whose names Prometheus refuses: the scrape reports it, the
		// other metrics are served.
		return prometheus.NewInvalidMetric(desc, fmt.Errorf("map %s%s: %w", control.MetricsMapPrefix, m.Map, err))
	}
	return pm
}

// labelName makes a BTF field name a label name Prometheus accepts: no
// leading digit, not one of the names it reserves.
func labelName(f string) string {
	f = sanitize(f)
	if f == "" || (f[0] >= '0' && f[0] <= '9') || strings.HasPrefix(f, "__") || f == "le" || f == "quantile" ||
		f == "host" || f == "pid" {
		return "key_" + f
	}
	return f
}

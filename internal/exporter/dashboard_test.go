package exporter

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var metricRef = regexp.MustCompile(`\bncclbpf_[a-z0-9_]+`)

// dashboardQueries returns every PromQL expression of a Grafana dashboard:
// the panels' "expr" and the template variables' "query"/"definition".
func dashboardQueries(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
				*out = append(*out, s)
			} else if m, ok := x.(map[string]any); ok && k == "query" {
				if q, ok := m["query"].(string); ok {
					*out = append(*out, q)
				}
			} else {
				dashboardQueries(x, out)
			}
		}
	case []any:
		for _, x := range v {
			dashboardQueries(x, out)
		}
	}
}

// unservedMetrics returns the metrics the queries name that the exporter
// does not serve (histograms by their _bucket, _sum and _count series).
func unservedMetrics(queries []string) []string {
	served := map[string]bool{}
	for _, m := range Metrics {
		served[m.name] = true
	}
	var bad []string
	for _, q := range queries {
		for _, name := range metricRef.FindAllString(q, -1) {
			base := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suf); ok && served[b] {
					base = b
				}
			}
			if !served[base] {
				bad = append(bad, name)
			}
		}
	}
	return bad
}

// TestGrafanaDashboard: docs/grafana/ncclbpf.json is valid JSON with
// panels, and every query names a metric the exporter serves.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana/ncclbpf.json")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("docs/grafana/ncclbpf.json: %v", err)
	}
	panels, _ := d["panels"].([]any)
	if len(panels) < 6 {
		t.Fatalf("%d panels", len(panels))
	}
	var qs []string
	dashboardQueries(d, &qs)
	n := 0
	for _, q := range qs {
		if metricRef.MatchString(q) {
			n++
		}
	}
	if n < len(panels) {
		t.Errorf("only %d queries name an ncclbpf metric for %d panels", n, len(panels))
	}
	if bad := unservedMetrics(qs); len(bad) > 0 {
		t.Errorf("the dashboard queries metrics the exporter does not serve: %v", bad)
	}
	// The check catches a wrong name.
	if bad := unservedMetrics([]string{`rate(ncclbpf_decision_total[5m])`, `ncclbpf_collective_latency_seconds_bucket`}); len(bad) != 1 {
		t.Errorf("a misspelt metric was not caught: %v", bad)
	}
}

// TestGrafanaDashboardPromQL: every panel query of the dashboard parses as
// PromQL (promtool check rules, with Grafana's variables replaced by
// values).
func TestGrafanaDashboardPromQL(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed: this test needs it (Debian package prometheus; scripts/setup.sh installs it)")
	}
	b, err := os.ReadFile("../../docs/grafana/ncclbpf.json")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var qs []string
	dashboardQueries(d, &qs)
	r := strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$host", ".*", "$collective", ".*", "$size", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, q := range qs {
		if strings.HasPrefix(q, "label_values(") || !metricRef.MatchString(q) {
			continue
		}
		n++
		qj, _ := json.Marshal(r.Replace(q))
		fmt.Fprintf(&rules, "      - record: dashboard:q%d\n        expr: %s\n", n, qj)
	}
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s\n%s", err, out, rules.String())
	}
	if n < 10 {
		t.Errorf("only %d panel queries checked", n)
	}
}

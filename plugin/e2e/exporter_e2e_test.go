package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/exporter"
	"github.com/ncclbpf/ncclbpf/internal/report"
)

// needTool fails the test, saying how to get it, when a program the test
// needs is not installed.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: this test needs it (Debian package %s; scripts/setup.sh installs it)", name, pkg)
	}
	return p
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// promSample is one series of an instant query.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s promSample) float(t *testing.T) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("prometheus value %v: %v", s.Value, err)
	}
	return f
}

// promQuery runs an instant query on Prometheus's HTTP API.
func promQuery(t *testing.T, addr, q string) []promSample {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("prometheus query %s: %v", q, err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("prometheus query %s: %v %s %s", q, err, r.Status, r.Error)
	}
	return r.Data.Result
}

// waitProm polls q until ok accepts its result.
func waitProm(t *testing.T, addr, q string, ok func([]promSample) bool) []promSample {
	t.Helper()
	var res []promSample
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if res = promQuery(t, addr, q); ok(res) {
			return res
		}
	}
	t.Fatalf("prometheus: %s never gave the expected result; last: %+v", q, res)
	return nil
}

// TestExporterWithPrometheus: a real Prometheus server scrapes `ncclbpf
// exporter` every second in front of two host processes that ran known
// traffic; the counts Prometheus returns through its HTTP API equal the
// hosts': decisions per collective, size bucket, outcome and "not NCCL's
// cheapest"; latency histograms (count, sum, every bucket) per collective,
// size bucket, algorithm and protocol from the profiler's measurements;
// getCollInfo calls; the policy's own metrics map. The exporter's output
// passes `promtool check metrics`, and a process that exits leaves the
// exporter's list.
func TestExporterWithPrometheus(t *testing.T) {
	promBin := needTool(t, "prometheus", "prometheus")
	promtool := needTool(t, "promtool", "prometheus")
	dir := filepath.Join(t.TempDir(), "ctl")
	// The second host speaks profiler ABI v7: collectives with user tags (label "tag").
	hosts := []*metricsHost{startMetricsHost(t, dir, 600), startMetricsHostABI(t, dir, 240, 7)}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- exporter.Serve(ctx, exporter.Options{Dir: dir, Listen: "127.0.0.1:0", Host: "testnode",
			Ready: func(a net.Addr) { addrc <- a.String() }})
	}()
	var expAddr string
	select {
	case expAddr = <-addrc:
	case err := <-errc:
		t.Fatalf("exporter: %v", err)
	}

	// promtool on what the exporter serves.
	resp, err := http.Get("http://" + expAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(string(body))
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	promAddr := freePort(t)
	work := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: ncclbpf\n    static_configs:\n      - targets: ['%s']\n", expAddr)
	if err := os.WriteFile(filepath.Join(work, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(promBin, "--config.file="+filepath.Join(work, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(work, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	var promLog lockedBuf
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		prom.Process.Kill()
		prom.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if r, err := http.Get("http://" + promAddr + "/-/ready"); err == nil && r.StatusCode == 200 {
			r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus did not get ready\n%s", promLog.String())
		}
	}
	waitProm(t, promAddr, `ncclbpf_exporter_processes{host="testnode"}`, func(r []promSample) bool {
		return len(r) == 1 && r[0].float(t) == 2
	})

	pidOf := map[string]*metricsHost{}
	for _, h := range hosts {
		pidOf[strconv.Itoa(h.PID)] = h
	}

	// Decisions.
	want := map[string]uint64{}
	for _, h := range hosts {
		for k, v := range h.expectedDecisions() {
			want[fmt.Sprintf("pid %d %s", h.PID, k)] = v
		}
	}
	cellOf := func(algo, proto string) int {
		for c := 0; c <= control.CellChannels; c++ {
			if a, p := control.CellNames(c); a == algo && p == proto {
				return c
			}
		}
		return -1
	}
	collOf := func(name string) int {
		for c := 0; c < 16; c++ {
			if control.CollName(c) == name {
				return c
			}
		}
		return -1
	}
	sbOf := func(s string) int {
		for b := 0; b < control.SizeBuckets; b++ {
			if exporter.SizeLabel(b) == s {
				return b
			}
		}
		return -1
	}
	got := map[string]uint64{}
	for _, s := range promQuery(t, promAddr, `ncclbpf_decisions_total{host="testnode"}`) {
		m := s.Metric
		comm, _ := strconv.ParseUint(m["comm"], 0, 64)
		ch, _ := strconv.Atoi(m["channels"])
		k := fmt.Sprintf("pid %s %s", m["pid"], decisionKey(comm, collOf(m["collective"]), sbOf(m["size_bucket"]),
			cellOf(m["algorithm"], m["protocol"]), ch, m["not_cheapest"] == "true"))
		got[k] += uint64(s.float(t))
	}
	compareCounts(t, "prometheus decisions", got, want)

	// getCollInfo calls per communicator.
	for _, s := range promQuery(t, promAddr, `ncclbpf_tuner_calls_total{host="testnode"}`) {
		h := pidOf[s.Metric["pid"]]
		if h == nil {
			t.Errorf("calls of an unknown pid: %+v", s.Metric)
			continue
		}
		comm, _ := strconv.ParseUint(s.Metric["comm"], 0, 64)
		var n float64
		for _, c := range h.Calls {
			if c.Comm == comm {
				n++
			}
		}
		if s.float(t) != n {
			t.Errorf("pid %d comm %#x: prometheus says %v getCollInfo calls, the host made %v", h.PID, comm, s.float(t), n)
		}
	}

	// Latency histograms: count, sum and every bucket.
	wantLat := map[string]*control.LatencyHist{}
	for _, h := range hosts {
		for k, v := range h.expectedLatency() {
			wantLat[fmt.Sprintf("pid %d %s", h.PID, k)] = v
		}
	}
	algoOf := func(s string) int {
		for a := -1; a < 7; a++ {
			if control.AlgoName(a) == s {
				return a
			}
		}
		return -9
	}
	protoOf := func(s string) int {
		for p := -1; p < 3; p++ {
			if control.ProtoName(p) == s {
				return p
			}
		}
		return -9
	}
	latKey := func(m map[string]string) string {
		comm, _ := strconv.ParseUint(m["comm"], 0, 64)
		return fmt.Sprintf("pid %s %s", m["pid"], latencyKey(comm, collOf(m["collective"]), sbOf(m["size_bucket"]),
			algoOf(m["algorithm"]), protoOf(m["protocol"]), m["tag"]))
	}
	counts := promQuery(t, promAddr, `ncclbpf_collective_latency_seconds_count{host="testnode"}`)
	if len(counts) != len(wantLat) {
		t.Errorf("prometheus has %d latency histograms, the hosts measured %d", len(counts), len(wantLat))
	}
	for _, s := range counts {
		w := wantLat[latKey(s.Metric)]
		if w == nil || uint64(s.float(t)) != w.Count {
			t.Errorf("latency count %s: prometheus %v, host %+v", latKey(s.Metric), s.float(t), w)
		}
	}
	for _, s := range promQuery(t, promAddr, `ncclbpf_collective_latency_seconds_sum{host="testnode"}`) {
		w := wantLat[latKey(s.Metric)]
		if w == nil || s.float(t) < float64(w.SumNS)/1e9*(1-1e-9) || s.float(t) > float64(w.SumNS)/1e9*(1+1e-9) {
			t.Errorf("latency sum %s: prometheus %v s, host %+v", latKey(s.Metric), s.float(t), w)
		}
	}
	nb := 0
	for _, s := range promQuery(t, promAddr, `ncclbpf_collective_latency_seconds_bucket{host="testnode"}`) {
		w := wantLat[latKey(s.Metric)]
		if w == nil {
			t.Errorf("latency bucket of an unknown histogram: %v", s.Metric)
			continue
		}
		le := s.Metric["le"]
		var cum uint64
		if le == "+Inf" {
			cum = w.Count
		} else {
			bound, _ := strconv.ParseFloat(le, 64)
			for i, c := range w.Buckets {
				if float64(control.LatencyBucketNS(i))/1e9 <= bound*(1+1e-12) {
					cum += c
				}
			}
		}
		if uint64(s.float(t)) != cum {
			t.Errorf("latency bucket %s le=%s: prometheus %v, host %d", latKey(s.Metric), le, s.float(t), cum)
		}
		nb++
	}
	if nb < len(wantLat)*control.LatencyBuckets {
		t.Errorf("only %d latency buckets for %d histograms", nb, len(wantLat))
	}

	// The policy's own map (metrics_colls): calls per collective.
	for _, s := range promQuery(t, promAddr, `ncclbpf_policy_colls_calls_total{host="testnode"}`) {
		h := pidOf[s.Metric["pid"]]
		coll, _ := strconv.Atoi(s.Metric["key"])
		var n float64
		for _, c := range h.Calls {
			if c.Coll == coll {
				n++
			}
		}
		if s.float(t) != n {
			t.Errorf("pid %d: policy map says %v calls of collective %d, the host made %v", h.PID, s.float(t), coll, n)
		}
	}

	// A process that exits leaves.
	hosts[1].Stop(t)
	waitProm(t, promAddr, `ncclbpf_exporter_processes{host="testnode"}`, func(r []promSample) bool {
		return len(r) == 1 && r[0].float(t) == 1
	})
	hosts[0].Stop(t)
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("exporter: %v", err)
	}
}

// TestReportFromHost: `ncclbpf report`'s library reads a running host
// through its control socket and shows its decisions (total and those
// costlier than NCCL's cheapest, as the host counted them), a latency
// chart per collective the profiler measured, and the policy's map.
func TestReportFromHost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctl")
	h := startMetricsHost(t, dir, 300)
	defer h.Stop(t)
	procs, warns, err := report.Gather(dir, []int{h.PID}, 5*time.Second)
	if err != nil || len(procs) != 1 || len(warns) != 0 {
		t.Fatalf("gather: %v %v %v", procs, warns, err)
	}
	var b strings.Builder
	if err := report.Write(&b, procs, report.Options{Host: "testnode"}); err != nil {
		t.Fatal(err)
	}
	var differs int
	colls := map[int]bool{}
	for _, c := range h.Calls {
		if c.Differs {
			differs++
		}
		colls[c.Coll] = true
	}
	row := fmt.Sprintf(`<td class="num">%d</td><td class="num">`, len(h.Calls))
	html := b.String()
	if !strings.Contains(html, row) || !strings.Contains(html, fmt.Sprintf(`<td class="num">%d</td></tr>`, differs)) {
		t.Errorf("the process row does not show %d decisions, %d not NCCL's cheapest", len(h.Calls), differs)
	}
	for c := range colls {
		if !strings.Contains(html, fmt.Sprintf(`data-collective="%s"`, control.CollName(c))) {
			t.Errorf("no latency chart for %s", control.CollName(c))
		}
	}
	if !strings.Contains(html, "map <b>metrics_colls</b>") || !strings.Contains(html, `id="decision-map"`) {
		t.Errorf("report lacks the decision map or the policy's map")
	}
	if _, _, err := report.Gather(dir, []int{h.PID + 1000000}, time.Second); err == nil {
		t.Errorf("a pid without a socket gave no error")
	}
}

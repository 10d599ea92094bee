package e2e

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/envconfig"
)

// metricsCall is one collective of the metrics host (profiler_host
// metrics): what the host applied and measured.
type metricsCall struct {
	Comm, Seq   uint64
	Coll        int
	Bytes       uint64
	Cell, Ch    int
	Differs     bool
	Algo, Proto int
	LatNS       uint64
}

// metricsHost is a running profiler_host metrics process.
type metricsHost struct {
	PID    int
	Mask   int // the profiler's event mask after the inits
	Calls  []metricsCall
	Dir    string // its control directory
	stdin  io.WriteCloser
	done   chan error
	stderr *lockedBuf
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Stop closes the host's stdin (it finalizes and exits) and waits.
func (h *metricsHost) Stop(t *testing.T) string {
	t.Helper()
	h.stdin.Close()
	select {
	case err := <-h.done:
		if err != nil {
			t.Errorf("metrics host: %v\nstderr:\n%s", err, h.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("metrics host did not exit")
	}
	return h.stderr.String()
}

// startMetricsHost runs the metrics host with the test policy over n
// collectives, with its control socket in dir, and returns once it has
// done its traffic (it then waits for Stop).
func startMetricsHost(t *testing.T, dir string, n int, env ...string) *metricsHost {
	t.Helper()
	profArtifacts(t)
	root := repoRoot(t)
	cmd := hostCommand(profArt.host, "metrics", art.lib, strconv.Itoa(n))
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), append([]string{envconfig.Policy + "=" + filepath.Join(root, "testhost/metrics_policy.bpf.o"),
		envconfig.ControlDir + "=" + dir}, env...)...)
	h := &metricsHost{Dir: dir, done: make(chan error, 1), stderr: &lockedBuf{}}
	cmd.Stderr = h.stderr
	var err error
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "mask" {
			m, _ := strconv.ParseInt(f[1], 0, 32)
			h.Mask = int(m)
		}
		if len(f) == 2 && f[0] == "ready" {
			h.PID, _ = strconv.Atoi(f[1])
			break
		}
		if len(f) != 11 || f[0] != "call" {
			continue
		}
		var c metricsCall
		var differs int
		_, err := fmt.Sscanf(sc.Text(), "call %v %d %d %d %d %d %d %d %d %d", &c.Comm, &c.Seq, &c.Coll, &c.Bytes,
			&c.Cell, &c.Ch, &differs, &c.Algo, &c.Proto, &c.LatNS)
		if err != nil {
			t.Fatalf("metrics host line %q: %v", sc.Text(), err)
		}
		c.Differs = differs != 0
		h.Calls = append(h.Calls, c)
	}
	go func() { io.Copy(io.Discard, out); h.done <- cmd.Wait() }()
	if h.PID == 0 {
		t.Fatalf("metrics host did not get ready\nstderr:\n%s", h.stderr.String())
	}
	if len(h.Calls) != n {
		t.Fatalf("metrics host: %d calls, want %d", len(h.Calls), n)
	}
	return h
}

// sizeBucket is metrics.h's ncclbpf_size_bucket.
func sizeBucket(n uint64) int {
	if n <= 1 {
		return 0
	}
	b := 64 - leadingZeros(n-1)
	if b >= control.SizeBuckets {
		b = control.SizeBuckets - 1
	}
	return b
}

func leadingZeros(x uint64) int {
	n := 0
	for i := 63; i >= 0 && x&(1<<uint(i)) == 0; i-- {
		n++
	}
	return n
}

// latencyBucket is the latency bucket of ns (metrics.h).
func latencyBucket(ns uint64) int {
	if ns <= 1<<control.LatencyMinLog2 {
		return 0
	}
	b := 64 - leadingZeros(ns-1) - control.LatencyMinLog2
	if b >= control.LatencyBuckets {
		b = control.LatencyBuckets - 1
	}
	return b
}

// decisionKey names a decision row.
func decisionKey(comm uint64, coll, sb, cell, ch int, differs bool) string {
	return fmt.Sprintf("comm %#x coll %d size %d cell %d ch %d differs %v", comm, coll, sb, cell, ch, differs)
}

// expectedDecisions are the host's decision counts.
func (h *metricsHost) expectedDecisions() map[string]uint64 {
	m := map[string]uint64{}
	for _, c := range h.Calls {
		m[decisionKey(c.Comm, c.Coll, sizeBucket(c.Bytes), c.Cell, c.Ch, c.Differs)]++
	}
	return m
}

// latencyKey names a latency histogram.
func latencyKey(comm uint64, coll, sb, algo, proto int) string {
	return fmt.Sprintf("comm %#x coll %d size %d algo %d proto %d", comm, coll, sb, algo, proto)
}

// expectedLatency are the host's latency histograms (count, sum, buckets).
func (h *metricsHost) expectedLatency() map[string]*control.LatencyHist {
	m := map[string]*control.LatencyHist{}
	for _, c := range h.Calls {
		k := latencyKey(c.Comm, c.Coll, sizeBucket(c.Bytes), c.Algo, c.Proto)
		if m[k] == nil {
			m[k] = &control.LatencyHist{Buckets: make([]uint64, control.LatencyBuckets)}
		}
		m[k].Count++
		m[k].SumNS += c.LatNS
		m[k].Buckets[latencyBucket(c.LatNS)]++
	}
	return m
}

// TestMetricsOperation: the control socket's metrics operation returns, for
// a host that ran known traffic, the host's decision counts per
// communicator, collective, size bucket, cell, channels and "not NCCL's
// cheapest", its latency histograms per collective, size bucket,
// algorithm and protocol, and the policy's metrics map.
func TestMetricsOperation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctl")
	h := startMetricsHost(t, dir, 600)
	defer h.Stop(t)
	cl := dialControl(t, dir, h.PID)
	defer cl.Close()
	resp, err := cl.Call(&control.Request{Op: control.OpMetrics})
	if err != nil || resp.Metrics == nil {
		t.Fatalf("metrics: %v %+v", err, resp)
	}
	m := resp.Metrics
	got := map[string]uint64{}
	for _, c := range m.Comms {
		if c.Overflow != 0 {
			t.Errorf("comm %#x: %d decisions overflowed", c.ID, c.Overflow)
		}
		for _, d := range c.Decisions {
			got[decisionKey(c.ID, d.Coll, d.SizeBucket, d.Cell, d.Channels, d.Differs)] += d.Count
		}
	}
	compareCounts(t, "decisions", got, h.expectedDecisions())
	var sawDiffers bool
	for _, c := range h.Calls {
		sawDiffers = sawDiffers || c.Differs
	}
	if !sawDiffers {
		t.Errorf("the traffic has no decision that differs from NCCL's cheapest: the test checks too little")
	}

	want := h.expectedLatency()
	gotLat := map[string]*control.LatencyHist{}
	for i := range m.Latency {
		l := &m.Latency[i]
		gotLat[latencyKey(l.Comm, l.Coll, l.SizeBucket, l.Algo, l.Proto)] = l
	}
	for k, w := range want {
		g := gotLat[k]
		if g == nil {
			t.Errorf("latency %s: missing (want %d tasks)", k, w.Count)
			continue
		}
		if g.Count != w.Count || g.SumNS != w.SumNS || fmt.Sprint(g.Buckets) != fmt.Sprint(w.Buckets) {
			t.Errorf("latency %s: got count %d sum %d buckets %v, want %d %d %v", k, g.Count, g.SumNS, g.Buckets,
				w.Count, w.SumNS, w.Buckets)
		}
	}
	if len(gotLat) != len(want) {
		t.Errorf("latency: %d histograms, want %d", len(gotLat), len(want))
	}
	if len(m.PolicyMaps) != 1 || !strings.Contains(string(m.PolicyMaps[0]), `"name":"metrics_colls"`) {
		t.Errorf("policy maps: %s", m.PolicyMaps)
	}
	// Read-only: a read-only socket serves it too.
	if _, err := control.ParseRequest([]byte(`{"op":"metrics"}`)); err != nil {
		t.Errorf("parse: %v", err)
	}
}

func compareCounts(t *testing.T, what string, got, want map[string]uint64) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	bad := 0
	for _, k := range keys {
		if got[k] != want[k] {
			if bad++; bad <= 20 {
				t.Errorf("%s %s: got %d, want %d", what, k, got[k], want[k])
			}
		}
	}
}

var dlogLine = regexp.MustCompile(`^nccl 3 0x40 ncclbpf: (applied config|decision): comm (0x[0-9a-f]+) call (\d+) (\w+) (\d+) bytes: (.*)$`)

// TestDecisionLog: with NCCLBPF_DECISION_LOG=on every decision gives one
// INFO line (NCCL_TUNING) that says what the host applied, call for call;
// with a rate of 7 lines a second, the host's 600 calls give at most 7
// lines a second, each still true.
func TestDecisionLog(t *testing.T) {
	names := map[int]string{0: "Broadcast", 2: "AllGather", 4: "AllReduce"}
	algos := []string{"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"}
	protos := []string{"LL", "LL128", "SIMPLE"}
	var took time.Duration
	check := func(rate string) (lines int) {
		t0 := time.Now()
		h := startMetricsHost(t, filepath.Join(t.TempDir(), "ctl"), 600, "HOST_LOG=1", envconfig.DecisionLog+"="+rate)
		took = time.Since(t0)
		stderr := h.Stop(t)
		byCall := map[string]metricsCall{}
		for _, c := range h.Calls {
			byCall[fmt.Sprintf("%#x/%d", c.Comm, c.Seq)] = c
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(stderr, "\n") {
			if !strings.Contains(line, "call ") {
				continue
			}
			mm := dlogLine.FindStringSubmatch(line)
			if mm == nil {
				continue
			}
			lines++
			key := mm[2] + "/" + mm[3]
			c, ok := byCall[key]
			if !ok || seen[key] {
				t.Errorf("decision log line for an unknown or repeated call: %q", line)
				continue
			}
			seen[key] = true
			want := "left to NCCL"
			if c.Cell < 21 {
				want = fmt.Sprintf("algorithm %s protocol %s channels %d", algos[c.Cell/3], protos[c.Cell%3], c.Ch)
				if c.Differs {
					want += " (not NCCL's cheapest)"
				}
			}
			if mm[4] != names[c.Coll] || mm[5] != strconv.FormatUint(c.Bytes, 10) || mm[6] != want {
				t.Errorf("decision log %q: the host applied %+v (want %q)", line, c, want)
			}
		}
		return lines
	}
	if n := check("on"); n != 600 {
		t.Errorf("NCCLBPF_DECISION_LOG=on: %d lines for 600 decisions", n)
	}
	// At most 7 lines in each second the host ran (it makes its 600 calls
	// in well under one on an idle machine).
	if n := check("7"); n < 7 || n > 7*(int(took/time.Second)+2) {
		t.Errorf("NCCLBPF_DECISION_LOG=7: %d lines for 600 decisions in %v", n, took)
	}
	if n := check("off"); n != 0 {
		t.Errorf("NCCLBPF_DECISION_LOG=off: %d lines", n)
	}
}

// TestLatencyWithoutProfilerProgram: with a policy that has no profiler
// program, NCCLBPF_LATENCY=on still asks NCCL for collective events (and
// their kernel channels), and the latency histograms equal the host's;
// without it the mask stays 0 and there are none.
func TestLatencyWithoutProfilerProgram(t *testing.T) {
	for _, on := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "ctl")
		env := []string{envconfig.Policy + "=builtin:size_aware"}
		if on {
			env = append(env, envconfig.Latency+"=on")
		}
		h := startMetricsHost(t, dir, 200, env...)
		cl := dialControl(t, dir, h.PID)
		resp, err := cl.Call(&control.Request{Op: control.OpMetrics})
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		m := resp.Metrics
		h.Stop(t)
		if m.Info.Attached != "tuner=size_aware" || m.LatencyAlways != on {
			t.Fatalf("NCCLBPF_LATENCY on=%v: attached %q, latency_always %v", on, m.Info.Attached, m.LatencyAlways)
		}
		if !on {
			if len(m.Latency) != 0 || h.Mask != 0 {
				t.Errorf("without NCCLBPF_LATENCY: mask %#x, %d histograms", h.Mask, len(m.Latency))
			}
			continue
		}
		if h.Mask&0x2 == 0 {
			t.Errorf("NCCLBPF_LATENCY=on: mask %#x has no collective events", h.Mask)
		}
		want := h.expectedLatency()
		if len(m.Latency) != len(want) {
			t.Errorf("NCCLBPF_LATENCY=on: %d histograms, want %d", len(m.Latency), len(want))
		}
		for _, l := range m.Latency {
			w := want[latencyKey(l.Comm, l.Coll, l.SizeBucket, l.Algo, l.Proto)]
			if w == nil || w.Count != l.Count || w.SumNS != l.SumNS {
				t.Errorf("histogram %+v: want %+v", l, w)
			}
		}
	}
}

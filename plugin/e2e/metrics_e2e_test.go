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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/internal/exporter"
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
	Tag         uint64 // the user tag (profiler ABI v7), 0: none
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
	return startMetricsHostABI(t, dir, n, 5, env...)
}

// startMetricsHostABI is startMetricsHost with the profiler ABI version v
// (5, or 7: collectives with user tags).
func startMetricsHostABI(t *testing.T, dir string, n, v int, env ...string) *metricsHost {
	t.Helper()
	profArtifacts(t)
	root := repoRoot(t)
	cmd := hostCommand(profArt.host, "metrics", art.lib, strconv.Itoa(n), strconv.Itoa(v))
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
		if len(f) != 12 || f[0] != "call" {
			continue
		}
		var c metricsCall
		var differs int
		_, err := fmt.Sscanf(sc.Text(), "call %v %d %d %d %d %d %d %d %d %d %v", &c.Comm, &c.Seq, &c.Coll, &c.Bytes,
			&c.Cell, &c.Ch, &differs, &c.Algo, &c.Proto, &c.LatNS, &c.Tag)
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

// latencyKey names a latency histogram; tag is its label "tag" (the
// exporter's: "" untagged, hexadecimal, or "other").
func latencyKey(comm uint64, coll, sb, algo, proto int, tag string) string {
	return fmt.Sprintf("comm %#x coll %d size %d algo %d proto %d tag %q", comm, coll, sb, algo, proto, tag)
}

// latencyHistKey is latencyKey of a histogram the process reported.
func latencyHistKey(l *control.LatencyHist) string {
	return latencyKey(l.Comm, l.Coll, l.SizeBucket, l.Algo, l.Proto, exporter.LatencyTagLabel(*l))
}

// expectedLatency are the host's latency histograms (count, sum, buckets),
// by the shim's rules for tags (metrics.h): per communicator, the first
// control.LatencyTags distinct tags and control.LatencyTaggedHists tagged
// histograms; the tasks of further tags or histograms go to the tag
// "other".
func (h *metricsHost) expectedLatency() map[string]*control.LatencyHist {
	m := map[string]*control.LatencyHist{}
	type commTags struct {
		tags   map[uint64]bool
		tagged int
	}
	comms := map[uint64]*commTags{}
	for _, c := range h.Calls {
		ct := comms[c.Comm]
		if ct == nil {
			ct = &commTags{tags: map[uint64]bool{}}
			comms[c.Comm] = ct
		}
		tag := ""
		if c.Tag != 0 {
			if !ct.tags[c.Tag] && len(ct.tags) < control.LatencyTags {
				ct.tags[c.Tag] = true
			}
			tag = exporter.OtherTagLabel
			if ct.tags[c.Tag] {
				tag = exporter.TagValueLabel(c.Tag)
				if m[latencyKey(c.Comm, c.Coll, sizeBucket(c.Bytes), c.Algo, c.Proto, tag)] == nil {
					if ct.tagged < control.LatencyTaggedHists {
						ct.tagged++
					} else {
						tag = exporter.OtherTagLabel
					}
				}
			}
		}
		k := latencyKey(c.Comm, c.Coll, sizeBucket(c.Bytes), c.Algo, c.Proto, tag)
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
	resp, err := cl.Call(&control.MetricsQuery{})
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
		gotLat[latencyHistKey(l)] = l
	}
	compareLatency(t, gotLat, want)
	if len(m.PolicyMaps) != 1 || !strings.Contains(string(m.PolicyMaps[0]), `"name":"metrics_colls"`) {
		t.Errorf("policy maps: %s", m.PolicyMaps)
	}
	// Read-only: a read-only socket serves it too.
	if _, err := control.ParseRequest([]byte(`{"v":2,"op":"metrics"}`)); err != nil {
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
		resp, err := cl.Call(&control.MetricsQuery{})
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
			w := want[latencyHistKey(&l)]
			if w == nil || w.Count != l.Count || w.SumNS != l.SumNS {
				t.Errorf("histogram %+v: want %+v", l, w)
			}
		}
	}
}

// TestLatencyTags: under profiler ABI v7, collectives of one key with
// distinct user tags are counted in separate latency histograms, each
// reported with its tag (control's metrics reply, and the exporter's label
// "tag"); a communicator keeps control.LatencyTags tags, the collectives of
// further ones are counted under the tag "other", none lost.
func TestLatencyTags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctl")
	const n = 240
	h := startMetricsHostABI(t, dir, n, 7)
	defer h.Stop(t)
	cl := dialControl(t, dir, h.PID)
	resp, err := cl.Call(&control.MetricsQuery{})
	cl.Close()
	if err != nil || resp.Metrics == nil {
		t.Fatalf("metrics: %v %+v", err, resp)
	}
	m := resp.Metrics
	if m.LatencyOverflow != 0 {
		t.Errorf("%d collectives overflowed the histograms", m.LatencyOverflow)
	}
	want := h.expectedLatency()
	got := map[string]*control.LatencyHist{}
	perTag := map[string]uint64{}
	tagsOf := map[uint64]map[uint64]bool{}
	var total uint64
	for i := range m.Latency {
		l := &m.Latency[i]
		k := latencyHistKey(l)
		if got[k] != nil {
			t.Errorf("latency %s: twice", k)
		}
		got[k] = l
		perTag[exporter.LatencyTagLabel(*l)] += l.Count
		total += l.Count
		if l.OtherTag && l.Tag != 0 {
			t.Errorf("latency %s: other tag with tag %#x", k, l.Tag)
		}
		if l.Tag != 0 {
			if tagsOf[l.Comm] == nil {
				tagsOf[l.Comm] = map[uint64]bool{}
			}
			tagsOf[l.Comm][l.Tag] = true
		}
	}
	compareLatency(t, got, want)
	if total != n {
		t.Errorf("histograms hold %d collectives, the host ran %d", total, n)
	}
	// The host's tags: 0, 0x11 and 0xabc0000000000001 in turn, then 20 new
	// ones a communicator: 16 kept, the rest "other".
	var wantPerTag = map[string]uint64{}
	for _, c := range h.Calls {
		if c.Tag == 0 {
			wantPerTag[""]++
		} else if c.Tag == 0x11 || c.Tag == 0xabc0000000000001 {
			wantPerTag[exporter.TagValueLabel(c.Tag)]++
		}
	}
	for _, tag := range []string{"", "0x11", "0xabc0000000000001"} {
		if perTag[tag] == 0 || perTag[tag] != wantPerTag[tag] {
			t.Errorf("tag %q: %d collectives, the host ran %d", tag, perTag[tag], wantPerTag[tag])
		}
	}
	// At least the collectives of the tags beyond the first LatencyTags of
	// each communicator, and of tags kept but past the tagged histograms.
	if least := uint64(2 * (20 + 2 - control.LatencyTags)); perTag[exporter.OtherTagLabel] <= least {
		t.Errorf("tag other: %d collectives, want more than %d", perTag[exporter.OtherTagLabel], least)
	}
	if len(tagsOf) != 2 {
		t.Errorf("tagged histograms of %d communicators, want 2", len(tagsOf))
	}
	for comm, tags := range tagsOf {
		if len(tags) > control.LatencyTags {
			t.Errorf("comm %#x: %d tags kept, want at most %d", comm, len(tags), control.LatencyTags)
		}
		nt := 0
		for _, l := range m.Latency {
			if l.Comm == comm && l.Tag != 0 {
				nt++
			}
		}
		if nt != control.LatencyTaggedHists {
			t.Errorf("comm %#x: %d tagged histograms, want %d (the traffic fills them)", comm, nt, control.LatencyTaggedHists)
		}
	}

	// The exporter's series: one per histogram, labelled with its tag.
	reg := prometheus.NewRegistry()
	reg.MustRegister(exporter.NewCollector(dir, "testnode", 5*time.Second))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != "ncclbpf_collective_latency_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if _, ok := labels["tag"]; !ok {
				t.Errorf("series without the label tag: %v", labels)
			}
			exported[labels["tag"]] += s.GetHistogram().GetSampleCount()
		}
	}
	if fmt.Sprint(exported) != fmt.Sprint(perTag) {
		t.Errorf("exported collectives per tag %v, the process reported %v", exported, perTag)
	}
}

// compareLatency compares the histograms a process reported with the
// host's.
func compareLatency(t *testing.T, got, want map[string]*control.LatencyHist) {
	t.Helper()
	for k, w := range want {
		g := got[k]
		if g == nil {
			t.Errorf("latency %s: missing (want %d tasks)", k, w.Count)
			continue
		}
		if g.Count != w.Count || g.SumNS != w.SumNS || fmt.Sprint(g.Buckets) != fmt.Sprint(w.Buckets) {
			t.Errorf("latency %s: got count %d sum %d buckets %v, want %d %d %v", k, g.Count, g.SumNS, g.Buckets,
				w.Count, w.SumNS, w.Buckets)
		}
	}
	if len(got) != len(want) {
		t.Errorf("latency: %d histograms, want %d", len(got), len(want))
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

var update = flag.Bool("update", false, "rewrite docs/report.png from the browser's screenshot")

// fixture is two processes of an 8-GPU job: NCCL's choice by size (Tree/LL
// small, Ring/LL128 mid, Ring/Simple large), a policy that moves mid-size
// AllReduce to Ring/Simple (costlier in NCCL's model), and latencies that
// follow alpha + size/beta per algorithm and protocol.
func fixture() []Process {
	type ab struct{ alpha, beta float64 } // µs, bytes per µs
	model := map[[2]int]ab{{0, 0}: {6, 2e3}, {1, 1}: {14, 9e3}, {1, 2}: {30, 22e3}}
	var procs []Process
	for r := 0; r < 2; r++ {
		m := &control.Metrics{Info: control.Info{PID: 4100 + r, Exe: "/opt/train/python3", Running: true,
			Policy: "/etc/ncclbpf/size_aware.bpf.o", SHA256: strings.Repeat("ab", 32), Attached: "tuner=size_aware, profiler/coll_end=latency_stats"}}
		cm := control.CommMetrics{ID: 0x7f3a, Ranks: 8, Nodes: 1}
		for _, coll := range []int{0, 2, 4} {
			for sb := 8; sb <= 28; sb++ {
				cell, differs := control.CellDefault, false
				algo, proto := 0, 0
				if sb > 16 {
					algo, proto = 1, 1
				}
				if sb > 22 {
					algo, proto = 1, 2
				}
				if coll == 4 && sb >= 20 && sb <= 26 {
					cell, algo, proto, differs = 1*3+2, 1, 2, sb <= 22
				}
				n := uint64(100 + 3*sb)
				cm.Calls += n
				cm.PolicyCalls += n
				if cell != control.CellDefault {
					cm.Applied += n
				}
				cm.Decisions = append(cm.Decisions, control.DecisionCount{Coll: coll, SizeBucket: sb, Cell: cell, Differs: differs, Count: n})
				md := model[[2]int{algo, proto}]
				us := md.alpha + math.Ldexp(1, sb)/md.beta*(1+0.1*float64(coll)/4)
				h := control.LatencyHist{Comm: cm.ID, Rank: r, Coll: coll, SizeBucket: sb, Algo: algo, Proto: proto,
					Count: n, SumNS: uint64(us * 1e3 * float64(n)), Buckets: make([]uint64, control.LatencyBuckets)}
				h.Buckets[int(math.Log2(us*1e3))-control.LatencyMinLog2+1] = n
				m.Latency = append(m.Latency, h)
			}
		}
		m.Comms = []control.CommMetrics{cm}
		dump, _ := json.Marshal(map[string]any{"name": "latency", "type": "hash", "entries": []map[string]any{
			{"key": map[string]any{"func": 4, "log2": 22}, "value": map[string]any{"count": 160, "ewma_ns": 212000, "max_ns": 260000}},
			{"key": map[string]any{"func": 2, "log2": 20}, "value": map[string]any{"count": 160, "ewma_ns": 118000, "max_ns": 131000}}}})
		procs = append(procs, Process{Metrics: m, Maps: []json.RawMessage{dump}})
	}
	return procs
}

func TestReportContents(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, fixture(), Options{Host: "node-7", Now: time.Unix(1800000000, 0)}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"ncclbpf report: node-7", `id="decision-map"`, `data-collective="allreduce"`,
		`data-collective="allgather"`, `data-collective="broadcast"`, "ring/simple", "tree/ll", "map <b>latency</b>", "ewma_ns"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(html, "<svg"); n < 4 {
		t.Errorf("%d svg elements", n)
	}
	if bad := remoteRef.FindString(html); bad != "" {
		t.Errorf("the report refers to something it would fetch: %q", bad)
	}
	// No decisions and no latency: the page says so.
	b.Reset()
	if err := Write(&b, []Process{{Metrics: &control.Metrics{Info: control.Info{PID: 1}}}}, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "No decision counted yet") || !strings.Contains(b.String(), "No latency measured") {
		t.Errorf("empty report:\n%s", b.String())
	}
}

// remoteRef finds what a browser would fetch: src/href to a URL with a
// scheme or protocol-relative, url(...) in CSS, @import.
var remoteRef = regexp.MustCompile(`(?i)((src|href)\s*=\s*["']?\s*(https?:|//|ftp:)|url\(\s*["']?(https?:|//)|@import)`)

// browser opens a page in headless chromium with no network (every host
// name fails to resolve; the page's own policy forbids any fetch) and
// returns the DOM after its scripts ran and the console lines.
func browser(t *testing.T, page string, screenshot string) (dom string, console []string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: this test needs it (Debian package chromium; scripts/setup.sh installs it)")
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1300,2300"}
	run := func(extra ...string) (string, string) {
		cmd := exec.Command(chromium, append(append(args, extra...), "file://"+page)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("chromium: %v\n%s", err, errb.String())
			}
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("chromium did not finish\n%s", errb.String())
		}
		return out.String(), errb.String()
	}
	dom, stderr := run("--dump-dom")
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			console = append(console, l)
		}
	}
	if screenshot != "" {
		_, stderr := run("--screenshot=" + screenshot)
		if fi, err := os.Stat(screenshot); err != nil || fi.Size() < 10000 {
			t.Fatalf("screenshot %s: %v %v\n%s", screenshot, fi, err, stderr)
		}
	}
	return dom, console
}

var rendered = regexp.MustCompile(`data-plots-rendered="(\d+)"`)
var plots = regexp.MustCompile(`data-plots="(\d+)"`)

// TestReportInBrowser: a real headless browser, with no network, opens the
// report: every chart is drawn (an SVG with visible size and shapes, as
// the page's own script counts them), the console stays empty (no script
// error, nothing refused), and the screenshot is the one in docs.
// A page with a script error is caught the same way.
func TestReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := Write(&b, fixture(), Options{Host: "node-7", Now: time.Unix(1800000000, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	if *update {
		shot, _ = filepath.Abs("../../docs/report.png")
	}
	dom, console := browser(t, page, shot)
	r, p := rendered.FindStringSubmatch(dom), plots.FindStringSubmatch(dom)
	if r == nil || p == nil {
		t.Fatalf("the page's script did not run: no data-plots-rendered in the DOM\nconsole: %v", console)
	}
	nr, _ := strconv.Atoi(r[1])
	np, _ := strconv.Atoi(p[1])
	if np != 4 || nr != np {
		t.Errorf("%d of %d charts rendered (want 4: the decision map and 3 latency charts)", nr, np)
	}
	if strings.Count(dom, "<path") < 50 {
		t.Errorf("the DOM has %d paths: charts not drawn", strings.Count(dom, "<path"))
	}
	if len(console) > 0 {
		t.Errorf("console messages (script errors or refused loads):\n%s", strings.Join(console, "\n"))
	}

	// The same checks catch a broken page.
	bad := filepath.Join(dir, "bad.html")
	broken := strings.Replace(b.String(), "document.body.setAttribute('data-plots-rendered'", "undefinedFn(); document.body.setAttribute('data-plots-rendered'", 1)
	broken = strings.Replace(broken, "</body>", `<img src="https://example.com/x.png"></body>`, 1)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console = browser(t, bad, "")
	if rendered.MatchString(dom) || len(console) < 2 {
		t.Errorf("a page with a script error and a remote image passed: console %v", console)
	}
}

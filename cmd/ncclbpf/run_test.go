package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/internal/tuner"
)

const (
	sizeAwareObj    = "../../policies/size_aware.bpf.o"
	rulesObj        = "../../policies/rules.bpf.o"
	latencyStatsObj = "../../policies/latency_stats/latency_stats.bpf.o"
	runTestObj      = "testdata/run/run.o"
)

// zz_run is a hook that only these tests know: "any hook works" means the
// command builds its context from the field descriptions alone.
func init() {
	hook.Register(&hook.Hook{
		Name:     "zz_run",
		Sections: []string{"zz_run"},
		Context: hook.Context{Name: "zz_ctx", Size: 48, Fields: []hook.Field{
			{Name: "factor", Offset: 0, Size: 4, Access: hook.Read},
			{Name: "in", Offset: 4, Size: 4, Access: hook.Read, Array: 4},
			{Name: "out", Offset: 20, Size: 4, Access: hook.Read | hook.Write, Array: 4},
			{Name: "seq", Offset: 40, Size: 8, Access: hook.Read},
		}},
		Helpers: []helpers.ID{helpers.TracePrintk, helpers.RingbufOutput},
		Return:  hook.Range{Min: 0, Max: 255},
		Doc:     "cmd/ncclbpf run tests",
	})
	// struct vtest_ctx of testdata/verifier/vtest.h, for the programs of
	// testdata/verifier/safe.o (section "vtest", which names no hook here).
	hook.Register(&hook.Hook{
		Name:     "zz_vtest",
		Sections: []string{"zz_vtest"},
		Context: hook.Context{Name: "vtest_ctx", Size: 72, Fields: []hook.Field{
			{Name: "op", Offset: 0, Size: 4, Access: hook.Read},
			{Name: "nranks", Offset: 4, Size: 4, Access: hook.Read},
			{Name: "bytes", Offset: 8, Size: 8, Access: hook.Read},
			{Name: "algo", Offset: 16, Size: 4, Access: hook.Read | hook.Write},
			{Name: "proto", Offset: 20, Size: 4, Access: hook.Write},
			{Name: "cost", Offset: 32, Size: 4, Access: hook.Read | hook.Write, Array: 8},
			{Name: "small", Offset: 64, Size: 2, Access: hook.Read},
			{Name: "flags", Offset: 68, Size: 4, Access: hook.Read},
		}},
		Helpers: []helpers.ID{helpers.MapLookupElem, helpers.MapUpdateElem, helpers.KtimeGetNs},
		Return:  hook.Range{Min: 0, Max: 255},
		Doc:     "cmd/ncclbpf run tests",
	})
}

// jsonReport is runReport as a client reads it.
type jsonReport struct {
	Program  string `json:"program"`
	Hook     string `json:"hook"`
	Verified bool   `json:"verified"`
	Engine   string `json:"engine"`
	Runs     int    `json:"runs"`
	R0       uint64 `json:"r0"`
	Inputs   []struct {
		Name    string `json:"name"`
		Value   int64  `json:"value"`
		Meaning string `json:"meaning"`
	} `json:"inputs"`
	Outputs []struct {
		Name    string `json:"name"`
		Value   int64  `json:"value"`
		Meaning string `json:"meaning"`
	} `json:"outputs"`
	Mem      string `json:"mem"`
	MemAfter string `json:"mem_after"`
	Effect   *struct {
		Applied   bool   `json:"applied"`
		Algorithm string `json:"algorithm"`
		Protocol  string `json:"protocol"`
		Channels  int64  `json:"channels"`
	} `json:"effect"`
	Outcomes []struct {
		Count int    `json:"count"`
		R0    uint64 `json:"r0"`
	} `json:"outcomes"`
	Maps []struct {
		Name    string            `json:"name"`
		Changed bool              `json:"changed"`
		Before  []json.RawMessage `json:"before"`
		After   []struct {
			Key   json.RawMessage `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"after"`
		Records []string `json:"records"`
	} `json:"maps"`
	Notes  []string `json:"notes"`
	Printk []string `json:"printk"`
}

func (r *jsonReport) out(name string) int64 {
	for _, f := range r.Outputs {
		if f.Name == name {
			return f.Value
		}
	}
	panic("no output " + name)
}

func (r *jsonReport) in(name string) int64 {
	for _, f := range r.Inputs {
		if f.Name == name {
			return f.Value
		}
	}
	panic("no input " + name)
}

// compact returns m without the indentation of --json.
func compact(m json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, m); err != nil {
		return string(m)
	}
	return b.String()
}

func runJSON(t *testing.T, args ...string) *jsonReport {
	t.Helper()
	code, stdout, stderr := runCLI(append([]string{"run", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("run %q: exit %d, stderr:\n%s", args, code, stderr)
	}
	var r jsonReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("run %q: %v in\n%s", args, err, stdout)
	}
	return &r
}

// size_aware's decisions, as policies/src/size_aware.bpf.c states them:
// Ring/Simple for AllReduce on one node / NVLink domain, 2..max_ranks
// ranks, size_lo <= bytes <= size_hi, when Ring/Simple is available;
// otherwise return 1 and leave everything to NCCL.
func TestRunSizeAware(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		apply bool
	}{
		{[]string{"--coll", "allreduce", "--bytes", "4MiB", "--ranks", "8"}, true},
		{[]string{"--bytes", "4194303"}, false}, // size_lo - 1
		{[]string{"--bytes", "128MiB"}, true},   // size_hi, inclusive
		{[]string{"--bytes", "134217729"}, false},
		{[]string{"--coll", "allgather", "--bytes", "4MiB"}, false},
		{[]string{"--coll", "reducescatter", "--bytes", "4MiB"}, false},
		{[]string{"--bytes", "8MiB", "--ranks", "2"}, true},
		{[]string{"--bytes", "8MiB", "--ranks", "1"}, false},
		{[]string{"--bytes", "8MiB", "--ranks", "16"}, false},
		{[]string{"--bytes", "8MiB", "--ranks", "16", "--nodes", "2"}, false},
		{[]string{"--bytes", "8MiB", "--set", "n_nvl_domains=2"}, false},
		{[]string{"--bytes", "8MiB", "--costs", "ring/simple=na"}, false},
		{[]string{"--bytes", "8MiB", "--costs", "none,ring/simple=10"}, true},
		{[]string{"--bytes", "8MiB", "--set", "cost[1][2]=-1"}, false},
		{[]string{"--bytes", "8MiB", "--set", "avail_mask=0x1fffdf"}, false}, // bit 5 = ring/simple
		{[]string{"--bytes", "1MiB", "--var", "size_lo=1M"}, true},
		{[]string{"--bytes", "8MiB", "--ranks", "16", "--var", "max_ranks=16"}, true},
		{[]string{"--bytes", "8MiB", "--engine", "jit"}, true},
		{[]string{"--bytes", "1MiB", "--engine", "jit"}, false},
	} {
		r := runJSON(t, append([]string{sizeAwareObj}, tc.args...)...)
		wantR0, algo, proto := uint64(1), int64(-1), int64(-1)
		if tc.apply {
			wantR0, algo, proto = 0, 1, 2
		}
		if r.R0 != wantR0 || r.out("algorithm") != algo || r.out("protocol") != proto || r.out("n_channels") != 0 {
			t.Errorf("size_aware %q: r0 %d, algorithm %d, protocol %d, channels %d; want %d, %d, %d, 0",
				tc.args, r.R0, r.out("algorithm"), r.out("protocol"), r.out("n_channels"), wantR0, algo, proto)
		}
		if r.Effect == nil || r.Effect.Applied != tc.apply || (tc.apply && (r.Effect.Algorithm != "ring" || r.Effect.Protocol != "simple")) {
			t.Errorf("size_aware %q: effect %+v", tc.args, r.Effect)
		}
		if !r.Verified || r.Hook != "tuner" || r.Program != "size_aware" {
			t.Errorf("size_aware %q: program %s hook %s verified %v", tc.args, r.Program, r.Hook, r.Verified)
		}
	}
	// --mem gives the raw context: no typical values, nothing derived.
	r := runJSON(t, sizeAwareObj, "--mem", strings.Repeat("00", 160), "--set", "coll_type=allreduce", "--bytes", "8MiB",
		"--ranks", "8", "--nodes", "1")
	if r.R0 != 1 || r.in("avail_mask") != 0 || r.in("comm_id") != 0 || r.out("algorithm") != 0 {
		t.Errorf("--mem zeroes: r0 %d, avail_mask %#x, algorithm %d", r.R0, r.in("avail_mask"), r.out("algorithm"))
	}
	r = runJSON(t, sizeAwareObj, "--mem", strings.Repeat("00", 160), "--set", "coll_type=allreduce", "--bytes", "8MiB",
		"--ranks", "8", "--nodes", "1", "--set", "avail_mask=0x20")
	if r.R0 != 0 || r.out("algorithm") != 1 || r.out("protocol") != 2 {
		t.Errorf("--mem with ring/simple available: r0 %d, %+v", r.R0, r.Outputs)
	}
	// Derived inputs follow the given ones.
	r = runJSON(t, sizeAwareObj, "--ranks", "16", "--nodes", "2", "--costs", "all=1,nvls=na")
	if r.in("n_nvl_domains") != 2 || r.in("min_ranks_per_nvl_domain") != 8 || r.in("avail_mask") != 0x1fffff&^(7<<12) {
		t.Errorf("derived: n_nvl_domains %d, min ranks %d, avail_mask %#x", r.in("n_nvl_domains"),
			r.in("min_ranks_per_nvl_domain"), r.in("avail_mask"))
	}

	code, stdout, stderr := runCLI("run", sizeAwareObj, "--coll", "allreduce", "--bytes", "4MiB", "--ranks", "8")
	for _, want := range []string{
		"program size_aware (section tuner, hook tuner, verified) from " + sizeAwareObj + ", engine interp\n",
		"  n_bytes                  = 4194304    4 MiB\n",
		"  coll_type                = 4          allreduce\n",
		"  r0 = 0  NCCLBPF_TUNER_APPLY: the host applies the outputs\n",
		"  algorithm  = 1          ring\n",
		"  protocol   = 2          simple\n",
		"  n_channels = 0          leave it to NCCL\n",
		"effect: NCCL runs ring/simple with its own channel count\n",
		"maps: none changed\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("run size_aware text: exit %d, stderr %q, output lacks %q:\n%s", code, stderr, want, stdout)
		}
	}
	code, stdout, _ = runCLI("run", "builtin:size_aware", "--bytes", "1MiB")
	if code != 0 || !strings.Contains(stdout, "r0 = 1  NCCLBPF_TUNER_DEFAULT") || !strings.Contains(stdout, "algorithm  = -1         leave it to NCCL") {
		t.Errorf("run builtin:size_aware --bytes 1MiB: exit %d\n%s", code, stdout)
	}
}

// rules: the decision for each call must be what tuner.Decide, the
// reference semantics of NCCL's example CSV tuner format, says.
func TestRunRules(t *testing.T) {
	csv := `# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks
allreduce,0,65536,tree,ll,-1,-1,-1
allgather,0,1048576,ring,ll128,8,2,-1
allreduce,65537,1000000000,ring,simple,16,1,8
allreduce,65537,1000000000,-1,ll128,-1,-1,-1
broadcast,0,4096,ring,default,4,-1,-1,1
`
	path := writeFile(t, t.TempDir(), "rules.csv", csv)
	rules, err := config.ParseRulesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		coll         int
		bytes        uint64
		nodes, ranks int
		costs        string
	}{
		{4, 32 << 10, 1, 8, ""},
		{4, 32 << 10, 1, 8, "tree/ll=na"},
		{4, 64 << 10, 2, 16, ""},
		{4, 1 << 20, 1, 8, ""},
		{4, 1 << 20, 1, 16, ""},
		{4, 1 << 20, 1, 8, "ring/simple=na"},
		{4, 1 << 20, 2, 16, "ll128=na"},
		{2, 64 << 10, 2, 16, ""},
		{2, 64 << 10, 1, 8, ""},
		{2, 2 << 20, 2, 16, ""},
		{0, 4096, 1, 8, ""},
		{0, 4097, 1, 8, ""},
		{1, 4096, 1, 8, ""},
	} {
		args := []string{rulesObj, "--rules", path, "--set", fmt.Sprintf("coll_type=%d", tc.coll),
			"--bytes", fmt.Sprint(tc.bytes), "--nodes", fmt.Sprint(tc.nodes), "--ranks", fmt.Sprint(tc.ranks)}
		if tc.costs != "" {
			args = append(args, "--costs", tc.costs)
		}
		r := runJSON(t, args...)
		mask := r.in("avail_mask")
		avail := func(a, p int) bool { return mask&(1<<(a*3+p)) != 0 }
		a, p, ch := tuner.Decide(rules, tc.coll, tc.bytes, tc.nodes, tc.ranks, 1, 0, avail)
		if r.R0 != 0 || r.out("algorithm") != int64(a) || r.out("protocol") != int64(p) || r.out("n_channels") != int64(ch) {
			t.Errorf("rules %+v: r0 %d, %d/%d/%d; tuner.Decide says %d/%d/%d", tc, r.R0,
				r.out("algorithm"), r.out("protocol"), r.out("n_channels"), a, p, ch)
		}
	}
	// Spot checks that do not depend on tuner.Decide.
	r := runJSON(t, "builtin:rules", "--rules", path, "--coll", "allgather", "--bytes", "64K", "--nodes", "2", "--ranks", "16")
	if r.out("algorithm") != 1 || r.out("protocol") != 1 || r.out("n_channels") != 8 || r.Effect == nil || r.Effect.Channels != 8 {
		t.Errorf("rules allgather 64K on 2 nodes: %+v, effect %+v", r.Outputs, r.Effect)
	}
	// As the plugin: a rule-table policy needs a file with at least one rule.
	for _, rulesArgs := range [][]string{nil, {"--rules", writeFile(t, t.TempDir(), "empty.csv", "# no rules\n")}} {
		args := append([]string{"run", "builtin:rules", "--coll", "allreduce", "--bytes", "32K"}, rulesArgs...)
		if code, stdout, stderr := runCLI(args...); code != 1 || stdout != "" || !strings.Contains(stderr, "builtin:rules: no rules: ") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and no rules", args, code, stderr)
		}
	}
	bad := writeFile(t, t.TempDir(), "bad.csv", "allreduce,0,10,ring,simple\n")
	if code, _, stderr := runCLI("run", rulesObj, "--rules", bad); code != 1 || !strings.Contains(stderr, "line 1: 5 fields") {
		t.Errorf("bad rules file: exit %d, stderr %q", code, stderr)
	}
	// As the plugin: a rules file for a policy without a table is ignored, with a note.
	r = runJSON(t, sizeAwareObj, "--rules", path)
	if len(r.Notes) != 1 || r.Notes[0] != "--rules="+path+" ignored: the policy has no rule table" {
		t.Errorf("rules for a policy without a table: notes %q", r.Notes)
	}
}

// latency_stats (profiler hook) keeps count, EWMA, max, total and last
// latency per collective and log2 size bucket in its hash map.
func TestRunLatencyStats(t *testing.T) {
	r := runJSON(t, latencyStatsObj, "--set", "func=allreduce", "--bytes", "1MiB", "--set", "duration_ns=1000", "--repeat", "3")
	if r.Hook != "profiler/coll_end" || r.Runs != 3 || len(r.Outcomes) != 1 || r.Outcomes[0].Count != 3 || r.R0 != 0 {
		t.Fatalf("latency_stats: hook %s, runs %d, outcomes %+v", r.Hook, r.Runs, r.Outcomes)
	}
	if len(r.Maps) != 1 || r.Maps[0].Name != "latency" || !r.Maps[0].Changed || len(r.Maps[0].Before) != 0 || len(r.Maps[0].After) != 1 {
		t.Fatalf("latency_stats maps: %+v", r.Maps)
	}
	e := r.Maps[0].After[0]
	if compact(e.Key) != `{"func":4,"bucket":20}` ||
		compact(e.Value) != `{"count":3,"ewma_ns":1000,"max_ns":1000,"total_ns":3000,"last_ns":1000}` {
		t.Errorf("latency entry: %s: %s", e.Key, e.Value)
	}
	// The GPU span wins over the host time when there is one.
	r = runJSON(t, latencyStatsObj, "--coll", "allgather", "--bytes", "5000", "--set", "gpu_duration_ns=700")
	e = r.Maps[0].After[0]
	if compact(e.Key) != `{"func":2,"bucket":12}` || !strings.Contains(compact(e.Value), `"max_ns":700,`) {
		t.Errorf("latency entry with GPU time: %s: %s", e.Key, e.Value)
	}
	code, stdout, _ := runCLI("run", latencyStatsObj, "--set", "func=allreduce", "--set", "duration_ns=250000", "--repeat", "3")
	for _, want := range []string{
		"  func            = 4          allreduce\n",
		"  duration_ns     = 250000     250µs\n",
		"  event           = 1          profiler/coll_end\n",
		"runs: 3, ",
		"map latency (hash, key 8 bytes, value 40 bytes, 0 -> 1/1024 entries) changed:\n" +
			"  + {func: 4, bucket: 20}: {count: 3, ewma_ns: 250000, max_ns: 250000, total_ns: 750000, last_ns: 250000}\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("latency_stats text: exit %d, output lacks %q:\n%s", code, want, stdout)
		}
	}
	// --maps none hides maps, --maps all shows unchanged ones.
	if r := runJSON(t, latencyStatsObj, "--maps", "none"); len(r.Maps) != 0 {
		t.Errorf("--maps none: %+v", r.Maps)
	}
	if r := runJSON(t, sizeAwareObj, "--maps", "all"); len(r.Maps) != 1 || r.Maps[0].Name != ".rodata" || r.Maps[0].Changed {
		t.Errorf("--maps all on size_aware: %+v", r.Maps)
	}
}

func TestRunGenericAndCustomHook(t *testing.T) {
	r := runJSON(t, runTestObj, "--unverified", "--section", "generic", "--mem", "01 02 03 04 05")
	if r.R0 != 15 || r.Mem != "0102030405" || r.MemAfter != "0f02030405" || r.Verified || r.Hook != "" {
		t.Errorf("generic: r0 %d, mem %s -> %s, verified %v, hook %q", r.R0, r.Mem, r.MemAfter, r.Verified, r.Hook)
	}
	if len(r.Maps) != 1 || r.Maps[0].Name != ".bss" || compact(r.Maps[0].After[0].Value) != `{"calls":1}` {
		t.Errorf("generic: maps %+v", r.Maps)
	}
	memFile := writeFile(t, t.TempDir(), "mem.hex", "# three bytes\n0a 0b\n0c\n")
	if r := runJSON(t, runTestObj, "--section", "sum_bytes", "--mem", "@"+memFile, "--repeat", "2", "--unverified"); r.R0 != 33 || len(r.Outcomes) != 1 {
		t.Errorf("generic with @file: r0 %d, outcomes %+v", r.R0, r.Outcomes)
	}
	// Verified by default: a program attached to no hook runs only when
	// asked for raw, on the interpreter, and the output says so.
	if code, _, stderr := runCLI("run", runTestObj, "--section", "generic", "--mem", "01"); code != 2 ||
		!strings.Contains(stderr, `program sum_bytes (section "generic") is attached to no hook, so it cannot be verified`) ||
		!strings.Contains(stderr, "--unverified") {
		t.Errorf("generic without --unverified: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI("run", runTestObj, "--unverified", "--section", "generic", "--engine", "jit"); code != 2 || !strings.Contains(stderr, "interpreter only") {
		t.Errorf("generic with jit: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI("run", runTestObj, "--unverified", "--section", "generic", "--bytes", "4"); code != 2 || !strings.Contains(stderr, "has no hook") {
		t.Errorf("generic with --bytes: exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ := runCLI("run", runTestObj, "--unverified", "--section", "generic", "--mem", "01")
	if code != 0 || !strings.Contains(stdout, "no hook, UNVERIFIED)") || !strings.Contains(stdout, "note: UNVERIFIED (--unverified)") {
		t.Errorf("generic text: exit %d\n%s", code, stdout)
	}
	// A hook's program run raw: not verified, and said so.
	if r := runJSON(t, sizeAwareObj, "--unverified", "--bytes", "4MiB"); r.Verified || r.Hook != "tuner" ||
		len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "UNVERIFIED") {
		t.Errorf("size_aware --unverified: verified %v hook %q notes %q", r.Verified, r.Hook, r.Notes)
	}

	// A hook the CLI has never heard of: fields by name, 1-D arrays, the
	// sequence number counting up with --repeat.
	args := []string{runTestObj, "--section", "scale", "--set", "factor=3", "--set", "in[0]=1", "--set", "in[1]=2",
		"--set", "in[3]=0x10", "--set", "seq=5", "--repeat", "4"}
	for _, engine := range []string{"interp", "jit"} {
		r = runJSON(t, append(args, "--engine", engine)...)
		if r.Hook != "zz_run" || !r.Verified || r.R0 != 8 || len(r.Outcomes) != 4 {
			t.Errorf("%s: custom hook: hook %q verified %v r0 %d outcomes %+v", engine, r.Hook, r.Verified, r.R0, r.Outcomes)
		}
		if r.out("out[0]") != 3 || r.out("out[1]") != 6 || r.out("out[2]") != 0 || r.out("out[3]") != 48 {
			t.Errorf("%s: custom hook outputs %+v", engine, r.Outputs)
		}
		var ring []string
		for _, m := range r.Maps {
			if m.Name == "events" && m.Changed {
				ring = m.Records
			}
		}
		if want := "0300000000000000" + "0500000000000000|0300000000000000" + "0600000000000000|" +
			"0300000000000000" + "0700000000000000|0300000000000000" + "0800000000000000"; strings.Join(ring, "|") != want {
			t.Errorf("%s: ring buffer records %q, want %q", engine, ring, want)
		}
		if want := "scale: factor 3, seq 5|scale: factor 3, seq 6|scale: factor 3, seq 7|scale: factor 3, seq 8"; strings.Join(r.Printk, "|") != want {
			t.Errorf("%s: printk %q, want %q", engine, r.Printk, want)
		}
	}
	code, stdout, stderr := runCLI(append([]string{"run"}, append(args[:len(args)-2], "--repeat", "2")...)...)
	for _, want := range []string{
		"  factor = 3\n  in[0]  = 1\n  in[1]  = 2\n  in[2]  = 0\n  in[3]  = 16\n  seq    = 5          counts up to 6 over the runs\n",
		"runs: 2, ", "  1× (first: run 0) r0 = 5 out[0]=3 out[1]=6 out[2]=0 out[3]=48\n",
		"  1× (first: run 1) r0 = 6 out[0]=3 out[1]=6 out[2]=0 out[3]=48\nlast run:\n  r0 = 6\n  out[0] = 3\n",
		"printk: scale: factor 3, seq 5\nprintk: scale: factor 3, seq 6\n",
		"map events (ringbuf, 4096 bytes): 2 record(s) submitted\n" +
			"  record 0 (16 bytes):\n    03 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00\n  record 1 (16 bytes):\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("custom hook text: exit %d, output lacks %q:\n%s", code, want, stdout)
		}
	}
	if code, _, stderr := runCLI("run", runTestObj, "--section", "scale", "--set", "facter=3"); code != 2 ||
		!strings.Contains(stderr, `zz_ctx has no field "facter" (did you mean factor?); fields: factor, in[4], out[4] (rw), seq`) {
		t.Errorf("misspelt field: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI("run", runTestObj, "--section", "scale", "--set", "in[4]=1"); code != 2 ||
		!strings.Contains(stderr, "index 4 out of range 0..3") {
		t.Errorf("index out of range: exit %d, stderr %q", code, stderr)
	}
	// --hook verifies a program against another hook than its section's.
	code, stdout, stderr = runCLI("run", runTestObj, "--section", "scale", "--hook", hook.Tuner)
	if code != 1 || !strings.Contains(stderr, "rejected by the verifier") || !strings.Contains(stderr, "run.c:") {
		t.Errorf("scale at the tuner hook: exit %d, stderr %q", code, stderr)
	}
	// A per-CPU array and global data changed by a program verified
	// against a hook that its section does not name.
	code, stdout, stderr = runCLI("run", "../../testdata/verifier/safe.o", "--section", "ok_histogram", "--hook", "zz_vtest",
		"--bytes", "4096", "--repeat", "2")
	for _, want := range []string{
		"note: section \"vtest\" names no hook; program ok_histogram runs verified against hook zz_vtest as --hook says\n",
		"  bytes  = 4096       4 KiB\n",
		"  r0 = 12\n",
		"map .bss (array, key 4 bytes, value 12 bytes, 1 -> 1/1 entries) changed:\n  ~ 0: calls: 0 -> 2\n",
		"map hists (percpu_array, key 4 bytes, value 136 bytes, 4 -> 4/4 entries) changed:\n  ~ 0: ",
		"  ~ 0: slot 0 count[12]: 0 -> 2, slot 0 total: 0 -> 8192\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("safe.o ok_histogram at zz_vtest: exit %d, stderr %q, output lacks %q:\n%s", code, stderr, want, stdout)
		}
	}
	code, stdout, _ = runCLI("run", "--hook", "zz_run", "--fields")
	if code != 0 || !strings.Contains(stdout, "      4    4  read   uniform  in[4]\n") || !strings.Contains(stdout, "     20    4  rw     uniform  out[4]\n") {
		t.Errorf("--fields: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runCLI("run", "--hook", "tuner", "--fields")
	if code != 0 || !strings.Contains(stdout, "cost[7][3]") || !strings.Contains(stdout, "typical values used unless set: comm_id=0x1") {
		t.Errorf("--fields tuner: exit %d\n%s", code, stdout)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := writeFile(t, dir, "garbage.o", "this is not an ELF file")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{filepath.Join(dir, "missing.o")}, 1, "no such file or directory"},
		{[]string{garbage}, 1, garbage + ": "},
		{[]string{"builtin:nope"}, 1, "builtin:nope: no such builtin policy (have: noop, rules, size_aware)"},
		{[]string{verifyObj, "--section", "bad_tuner_null"}, 1,
			"program bad_tuner_null (section \"tuner\", hook tuner) rejected by the verifier:\n" +
				"    ./tuner.c:31:19: E012 null-deref: read through r0, which may be null"},
		{[]string{verifyObj, "--section", "bad_tuner_null"}, 1, "        ctx->algorithm = *algo; /* ERROR E012 */\n        pc 9: ldxw %r1, [%r0]\n"},
		{[]string{verifyObj}, 2, "has 3 programs: bad_tuner_null (section tuner), bad_tuner_write_input (section tuner), ok_tuner_cached (section tuner); choose one with --section"},
		{[]string{verifyObj, "--section", "tuner"}, 2, `3 programs in section "tuner"`},
		{[]string{verifyObj, "--section", "nope"}, 1, `no program in section "nope"; the object has: bad_tuner_null (section tuner)`},
		{[]string{sizeAwareObj, "--set", "n_byte=4"}, 2, `has no field "n_byte" (did you mean n_bytes?); fields: comm_id, call_seq, n_bytes,`},
		{[]string{sizeAwareObj, "--set", "cost=4"}, 2, "cost is an array cost[7][3]: name one element, e.g. cost[0][0]"},
		{[]string{sizeAwareObj, "--set", "n_bytes"}, 2, `"n_bytes": want FIELD=VALUE`},
		{[]string{sizeAwareObj, "--bytes", "4XB"}, 2, `--bytes: n_bytes=4XB: value "4XB" is not an integer`},
		{[]string{sizeAwareObj, "--ranks", "5000000000"}, 2, "n_ranks: value 5000000000 does not fit in 4 bytes"},
		{[]string{sizeAwareObj, "--coll", "allsum"}, 2, "want a number or one of broadcast, reduce, allgather, reducescatter, allreduce"},
		{[]string{sizeAwareObj, "--set", "cost[1][2]=fast"}, 2, `"fast": want a cost in microseconds`},
		{[]string{sizeAwareObj, "--costs", "ring/fast=1"}, 2, `"ring/fast": want ALGO/PROTO`},
		{[]string{sizeAwareObj, "--costs", "ring"}, 2, `"ring": want ALGO=US`},
		{[]string{sizeAwareObj, "--var", "size_low=1"}, 2, "size_low: no such global variable (the object has: max_ranks, size_hi, size_lo)"},
		{[]string{sizeAwareObj, "--var", "max_ranks=1T"}, 2, "--var max_ranks: value \"1T\" is not an integer"},
		{[]string{sizeAwareObj, "--var", "size_lo=8M size_hi=1G"}, 2, "--var size_lo: value \"8M size_hi=1G\" runs into another setting: separate settings with commas, not spaces"},
		{[]string{sizeAwareObj, "--var", "max_ranks=0x100000000"}, 2, "does not fit in 4 bytes"},
		{[]string{sizeAwareObj, "--mem", "zz"}, 2, "not hex bytes"},
		{[]string{sizeAwareObj, "--mem", strings.Repeat("00", 161)}, 2, "--mem: 161 bytes, but the context of hook tuner (struct ncclbpf_tuner_ctx) has 160"},
		{[]string{latencyStatsObj, "--costs", "ring=1"}, 2, "hook profiler/coll_end has no cost table"},
		{[]string{latencyStatsObj, "--nodes", "2"}, 2, "the context of hook profiler/coll_end has no field n_nodes"},
		{[]string{runTestObj, "--unverified", "--section", "generic/oob", "--mem", "0102"}, 1,
			`program read_past: run 1 of 1: interp: program "read_past": pc 1 (ldxb %r0, [%r1+8]): load of 1 bytes at `},
		{[]string{runTestObj, "--unverified", "--section", "use_map", "--mem", "0102"}, 1,
			"unknown helper bpf_ringbuf_output (id 130) (unverified programs may call only helpers that take no pointers; give --hook"},
		{[]string{}, 2, "want one object file, got 0 arguments"},
		{[]string{sizeAwareObj, sizeAwareObj}, 2, "want one object file, got 2 arguments"},
		{[]string{sizeAwareObj, "--repeat", "0"}, 2, "--repeat 0: want at least 1"},
		{[]string{sizeAwareObj, "--maps", "some"}, 2, `--maps "some": want changed, all or none`},
		{[]string{sizeAwareObj, "--engine", "nope"}, 2, `unknown engine "nope"`},
		{[]string{sizeAwareObj, "--hook", "nope"}, 2, `unknown hook "nope"; hooks: `},
		{[]string{sizeAwareObj, "--hook", "profiler/coll_end"}, 1, "rejected by the verifier"},
		{[]string{sizeAwareObj, "--var", "=1"}, 2, `--var "=1": want NAME=VALUE`},
		{[]string{sizeAwareObj, "--var", "x=abc"}, 2, `--var x: value "abc" is not an integer`},
		{[]string{sizeAwareObj, "--ranks", "0"}, 2, `--ranks 0: want at least 1`},
		{[]string{sizeAwareObj, "--nodes", "0"}, 2, `--nodes 0: want at least 1`},
		{[]string{sizeAwareObj, "--coll", "allreduc"}, 2, `--coll: coll_type=allreduc: want a number or one of`},
		{[]string{sizeAwareObj, "--bytes", "lots"}, 2, `--bytes: n_bytes=lots: value "lots" is not an integer`},
		{[]string{sizeAwareObj, "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{sizeAwareObj, "--repeat", "x"}, 2, `invalid argument "x" for "--repeat" flag: want an integer`},
	} {
		code, stdout, stderr := runCLI(append([]string{"run"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || strings.Count(stderr, "ncclbpf run: ") != 1 {
			t.Errorf("run %q: exit %d, stderr:\n%s\nwant exit %d and %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
		if stdout != "" {
			t.Errorf("run %q: stdout %q, want nothing", tc.args, stdout)
		}
	}
}

func TestRunHelpAndNotes(t *testing.T) {
	code, stdout, _ := runCLI("help", "run")
	for _, want := range []string{
		"ncclbpf run policies/size_aware.bpf.o --coll allreduce --bytes 4MiB --ranks 8",
		"-set FIELD=VALUE", "-costs", "-mem HEX", "-repeat N", "cost[1][2]=12.5",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("help run lacks %q", want)
		}
	}
	// Several programs, one of them the tuner: it runs, and a note says so.
	obj := "../../policies/adaptive/adaptive.bpf.o"
	if _, err := os.Stat(obj); err != nil {
		t.Fatal(err)
	}
	r := runJSON(t, obj)
	if r.Hook != "tuner" || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "running the tuner program") {
		t.Errorf("adaptive: hook %q, notes %q", r.Hook, r.Notes)
	}
	if r := runJSON(t, obj, "--hook", "profiler/coll_end"); r.Hook != "profiler/coll_end" || len(r.Notes) != 0 {
		t.Errorf("adaptive --hook profiler/coll_end: hook %q, notes %q", r.Hook, r.Notes)
	}
}

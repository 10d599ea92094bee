package ncclabi

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDefaultTuning(t *testing.T) {
	tu := DefaultTuning()
	c := tu.Comm
	if c.Version != [3]int{2, 28, 9} || c.NRanks != 8 || c.NNodes != 1 || c.LocalRanks != 8 || c.NChannels != 32 {
		t.Errorf("facts %+v; want 2.28.9, 8 ranks, 1 node, 8 local ranks, 32 channels", c)
	}
	// AllReduce Ring/Simple 56.0/182.9, Broadcast Ring/LL 10.8/141.0, AllGather NVLS/Simple 25.0/270.0.
	for _, tc := range []struct {
		f, a, p int
		lat, bw float64
	}{{4, 1, 2, 56.0, 182.9}, {0, 1, 0, 10.8, 141.0}, {2, 4, 2, 25.0, 270.0}, {4, 0, 1, 31.5, 124.4}, {1, 6, 2, 0, 0}} {
		if tu.Lat[tc.f][tc.a][tc.p] != tc.lat || tu.BW[tc.f][tc.a][tc.p] != tc.bw {
			t.Errorf("cell %d/%d/%d: %g/%g; want %g/%g", tc.f, tc.a, tc.p, tu.Lat[tc.f][tc.a][tc.p], tu.BW[tc.f][tc.a][tc.p], tc.lat, tc.bw)
		}
	}
	if tu.MaxThreads[1][1] != 640 || tu.Line != 7 {
		t.Errorf("max threads ring/ll128 %d, table at line %d; want 640, 7", tu.MaxThreads[1][1], tu.Line)
	}
}

// A log of two processes, interleaved, with NCCL's prefixes: the tables and
// facts are tied to the process that printed them.
func TestParseInterleaved(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(defaultTuningLog), "\n")
	var log []string
	for _, l := range lines {
		log = append(log, l)
		if strings.Contains(l, "NCCL INFO comm ") { // another process's communicator, no tables
			log = append(log, "h:777:777 [0] NCCL INFO comm 0x1 rank 1 nRanks 8 nNodes 1 localRanks 8 localRank 1 MNNVL 0")
			log = append(log, "h:777:777 [0] NCCL INFO 2 coll channels, 2 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer")
		}
	}
	ts, err := ParseTuningLog(strings.NewReader(strings.Join(log, "\n")), "two.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Comm.NChannels != 32 || ts[0].Lat != DefaultTuning().Lat {
		t.Errorf("%d tables, channels %d; want the one of process 4242 with 32 channels", len(ts), ts[0].Comm.NChannels)
	}
	// Bare lines (no prefix) parse the same.
	var bare []string
	for _, l := range lines {
		_, msg := splitPrefix(l)
		bare = append(bare, msg)
	}
	ts, err = ParseTuningLog(strings.NewReader(strings.Join(bare, "\n")), "bare.log")
	if err != nil || ts[0].BW != DefaultTuning().BW || ts[0].Comm.NRanks != 8 {
		t.Errorf("bare lines: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(defaultTuningLog), "\n")
	edit := func(match, repl string) string {
		out := append([]string(nil), lines...)
		for i, l := range out {
			if strings.Contains(l, match) {
				out[i] = strings.Replace(l, match, repl, 1)
				break
			}
		}
		return strings.Join(out, "\n")
	}
	drop := func(match string) string {
		var out []string
		for _, l := range lines {
			if !strings.Contains(l, match) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	for _, tc := range []struct{ log, want string }{
		{edit("56.0/ 182.9", "56.0x 182.9"), `x.log:14: AllReduce Ring/Simple: "56.0x 182.9" is not LAT/BW`},
		{edit("56.0/ 182.9", "56.0/ -1.0"), `x.log:14: AllReduce Ring/Simple: "56.0/ -1.0": negative`},
		{edit("   56.0/ 182.9 |", ""), "x.log:14: AllReduce line with 8 cells; want 9"},
		{edit("CollNetDirect", "Collnet"), `x.log:7: Algorithm line: unknown algorithm "Collnet"`},
		{edit("LL128 |", "LL129 |"), `x.log:8: Protocol line: unknown protocol "LL129"`},
		{edit("   640 |", "   6x0 |"), `x.log:9: Max NThreads value 2 "6x0" is not an integer`},
		{edit("nNodes 1", "nNodes x"), `x.log:6: "comm 0x5581a3c0 rank 0 nRanks 8 nNodes x localRanks 8 localRank 0 MNNVL 0": nNodes "x" is not a number`},
		{edit("nNodes 1", "nNodes 9"), "x.log:6: \"comm 0x5581a3c0 rank 0 nRanks 8 nNodes 9 localRanks 8 localRank 0 MNNVL 0\": want 1 <= nNodes <= nRanks"},
		{edit("2.28.9+cuda", "two+cuda"), "x.log:5: \"NCCL version two+cuda12.9\": want NCCL version MAJOR.MINOR.PATCH"},
		{edit("32 coll channels", "x coll channels"), "x.log:31: \"x coll channels, "},
		{drop("  Algorithm   |"), "x.log:7: Protocol line before an Algorithm line"},
		{drop("  Protocol    |"), "x.log:8: Max NThreads line before Algorithm and Protocol lines"},
		{drop("Reduce |"), "x.log:7: the tuning table that starts here has no Reduce line for Tree"},
		{"nothing\n", "x.log: no tuning table"},
	} {
		_, err := ParseTuningLog(strings.NewReader(tc.log), "x.log")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v; want an error with %q", err, tc.want)
		}
	}
}

// tableOf builds a Tuning of one AllReduce Tree and Ring row, by hand.
func tableOf(nodes int) *Tuning {
	tu := &Tuning{Comm: Comm{Version: [3]int{2, 30, 7}, NRanks: 4, NNodes: nodes, LocalRanks: 4 / nodes, NChannels: 2, MinCompCap: 90}}
	for f := 0; f < NumFuncs; f++ {
		tu.Lat[f][algoRing] = [3]float64{10, 20, 30}
		tu.BW[f][algoRing] = [3]float64{5, 10, 20}
	}
	tu.Lat[funcAllReduce][algoTree] = [3]float64{12, 22, 32}
	tu.BW[funcAllReduce][algoTree] = [3]float64{4, 8, 16}
	tu.Lat[funcAllReduce][algoNVLS][protoSimple], tu.BW[funcAllReduce][algoNVLS][protoSimple] = 25, 100
	tu.Lat[2][algoPAT][protoSimple], tu.BW[2][algoPAT][protoSimple] = 8, 2
	tu.Lat[3][algoPAT][protoSimple], tu.BW[3][algoPAT][protoSimple] = 8, 2
	return tu
}

func near(a float32, b float64) bool { return math.Abs(float64(a)-b) <= 1e-5*math.Abs(b)+1e-6 }

// The model's parts, each against arithmetic done by hand.
func TestCostsByHand(t *testing.T) {
	one := tableOf(1)
	c := one.Costs(one.Comm, Call{Func: funcAllReduce, Bytes: 4096, NumPipeOps: 1})
	// 4096 B: log2(4096/64) = 6; Tree LL factor .7, LL128 .8, Simple .9.
	for _, tc := range []struct {
		a, p int
		want float64
	}{
		{algoTree, protoLL, 12 + 4096/(1000*4*0.7)},
		{algoTree, protoLL128, 22 + 4096/(1000*8*0.8)},
		{algoTree, protoSimple, 32 + 4096/(1000*16*0.9)},
		{algoRing, protoSimple, 30 + 4096/(1000*20.0)}, // one node: no plateau
		{algoNVLS, protoSimple, 25 + 4096/(1000*100.0)},
	} {
		if !near(c[tc.a][tc.p], tc.want) {
			t.Errorf("AllReduce 4096 B cell %d/%d = %g; want %g", tc.a, tc.p, c[tc.a][tc.p], tc.want)
		}
	}
	for _, cell := range [][2]int{{algoNVLS, protoLL}, {algoCollNetDirect, protoSimple}, {algoPAT, protoSimple}, {algoNVLSTree, protoSimple}} {
		if c[cell[0]][cell[1]] != Unavailable {
			t.Errorf("cell %v = %g; want unavailable (bandwidth 0)", cell, c[cell[0]][cell[1]])
		}
	}
	// Below 64 B and from 512 MiB on, no correction; AllGather's Tree has none.
	if c := one.Costs(one.Comm, Call{Func: funcAllReduce, Bytes: 32}); !near(c[algoTree][protoLL], 12+32/(1000*4.0)) {
		t.Errorf("AllReduce 32 B Tree/LL = %g", c[algoTree][protoLL])
	}
	if c := one.Costs(one.Comm, Call{Func: funcAllReduce, Bytes: 1 << 29}); !near(c[algoTree][protoSimple], 32+(1<<29)/(1000*16.0)) {
		t.Errorf("AllReduce 512 MiB Tree/Simple = %g", c[algoTree][protoSimple])
	}
	// Two nodes: Ring/Simple AllReduce latency ×1.4 once bytes/(channels*ranks) >= 64 (512 B here);
	// NVLS needs CollNet across nodes.
	two := tableOf(2)
	c = two.Costs(two.Comm, Call{Func: funcAllReduce, Bytes: 511})
	if !near(c[algoRing][protoSimple], 30+511/(1000*20.0)) || c[algoNVLS][protoSimple] != Unavailable {
		t.Errorf("2 nodes, 511 B: Ring/Simple %g, NVLS %g", c[algoRing][protoSimple], c[algoNVLS][protoSimple])
	}
	c = two.Costs(two.Comm, Call{Func: funcAllReduce, Bytes: 512})
	if !near(c[algoRing][protoSimple], 30*1.4+512/(1000*20.0)) || !near(c[algoRing][protoLL], 10+512/(1000*5.0)) {
		t.Errorf("2 nodes, 512 B: Ring/Simple %g, Ring/LL %g", c[algoRing][protoSimple], c[algoRing][protoLL])
	}
	old := two.Comm
	old.MinCompCap = 70
	if c := two.Costs(old, Call{Func: funcAllReduce, Bytes: 512}); !near(c[algoRing][protoSimple], 30*1.9+512/(1000*20.0)) {
		t.Errorf("sm_70: Ring/Simple %g; want the 1.9 plateau", c[algoRing][protoSimple])
	}
	// Pipelined ops: Ring pays each latency, the others one per batch (8 from 2.30, 10 before).
	c = one.Costs(one.Comm, Call{Func: funcAllReduce, Bytes: 1 << 30, NumPipeOps: 9})
	if !near(c[algoRing][protoLL], 9*10+(1<<30)/(1000*5.0)) || !near(c[algoTree][protoLL], 2*12+(1<<30)/(1000*4.0)) {
		t.Errorf("9 pipe ops: Ring/LL %g, Tree/LL %g", c[algoRing][protoLL], c[algoTree][protoLL])
	}
	v228 := one.Comm
	v228.Version = [3]int{2, 28, 9}
	if c := one.Costs(v228, Call{Func: funcAllReduce, Bytes: 1 << 30, NumPipeOps: 9}); !near(c[algoTree][protoLL], 12+(1<<30)/(1000*4.0)) {
		t.Errorf("2.28, 9 pipe ops: Tree/LL %g; want one latency", c[algoTree][protoLL])
	}
	// One rank: Ring/Simple at 0, nothing else.
	r1 := one.Comm
	r1.NRanks = 1
	c = one.Costs(r1, Call{Func: funcAllReduce, Bytes: 4096})
	for a := 0; a < NumAlgos; a++ {
		for p := 0; p < NumProtos; p++ {
			want := Unavailable
			if a == algoRing && p == protoSimple {
				want = 0
			}
			if c[a][p] != want {
				t.Errorf("1 rank: cell %d/%d = %g; want %g", a, p, c[a][p], want)
			}
		}
	}
	// PAT is left out of a scaled ReduceScatter; FP8 Ring costs 1024 times more beyond 8 ranks.
	if c := one.Costs(one.Comm, Call{Func: 3, Bytes: 4096, ScaledOp: true}); c[algoPAT][protoSimple] != Unavailable {
		t.Errorf("ReduceScatter avg: PAT %g", c[algoPAT][protoSimple])
	}
	if c := one.Costs(one.Comm, Call{Func: 2, Bytes: 4096, ScaledOp: true}); !near(c[algoPAT][protoSimple], 8+4096/2000.0) {
		t.Errorf("AllGather: PAT %g", c[algoPAT][protoSimple])
	}
	many := one.Comm
	many.NRanks = 16
	if c := one.Costs(many, Call{Func: funcAllReduce, Bytes: 4096, FP8: true}); !near(c[algoRing][protoSimple], 1024*(30+4096/20000.0)) {
		t.Errorf("FP8 on 16 ranks: Ring/Simple %g", c[algoRing][protoSimple])
	}
	// CollNet with more than 8 local ranks, and NVLS off without bandwidth.
	cn := tableOf(1)
	cn.BW[funcAllReduce][algoCollNetDirect][protoSimple], cn.Lat[funcAllReduce][algoCollNetDirect][protoSimple] = 50, 9
	wide := cn.Comm
	wide.LocalRanks = 9
	if c := cn.Costs(cn.Comm, Call{Func: funcAllReduce, Bytes: 4096}); !near(c[algoCollNetDirect][protoSimple], 9+4096/50000.0) {
		t.Errorf("CollNet Direct: %g", c[algoCollNetDirect][protoSimple])
	}
	if c := cn.Costs(wide, Call{Func: funcAllReduce, Bytes: 4096}); c[algoCollNetDirect][protoSimple] != Unavailable {
		t.Errorf("CollNet Direct with 9 local ranks: %g", c[algoCollNetDirect][protoSimple])
	}
}

// The captures of testdata/capture/NAME/{tuning.log,costs.json}: every
// cell NCCL handed the tuner must be the model's, computed from the tables
// of the same log, within the log's printing precision.
func TestCaptures(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/capture/*/costs.json")
	if len(dirs) == 0 {
		t.Fatal("no capture in testdata/capture/*/ (tuning.log and costs.json, from scripts/gpu-cost-capture.sh)")
	}
	for _, costs := range dirs {
		dir := filepath.Dir(costs)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tu, capt := loadCapture(t, dir)
			bad := tu.Check(capt)
			for i, m := range bad {
				if i == 20 {
					t.Errorf("... and %d more", len(bad)-20)
					break
				}
				t.Errorf("%s: %s", dir, m)
			}
			t.Logf("%s: %d calls, %d cells, %d outside the model", dir, len(capt.Calls), len(capt.Calls)*21, len(bad))
		})
	}
}

func loadCapture(t *testing.T, dir string) (*Tuning, *Capture) {
	t.Helper()
	capt, err := ReadCapture(filepath.Join(dir, "costs.json"))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := ParseTuningLogFile(filepath.Join(dir, "tuning.log"))
	if err != nil {
		t.Fatal(err)
	}
	var match []*Tuning
	for _, tu := range ts {
		if tu.Comm.NRanks == capt.Calls[0].NRanks && tu.Comm.NNodes == capt.Calls[0].NNodes {
			match = append(match, tu)
		}
	}
	if len(match) != 1 {
		t.Fatalf("%s: %d tables for %d ranks on %d nodes; want one", dir, len(match), capt.Calls[0].NRanks, capt.Calls[0].NNodes)
	}
	return match[0], capt
}

// A wrong model must fail the comparison: each part of NCCL's model left
// out in turn, on every capture where that part is seen, and each part is
// seen in one capture at least.
func TestCapturesCatchWrongModel(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/capture/*/costs.json")
	seen := map[string]bool{}
	for _, costs := range dirs {
		tu, capt := loadCapture(t, filepath.Dir(costs))
		treeSeen := false
		for _, c := range capt.Calls {
			if c.Coll == funcAllReduce && c.Bytes >= 256 && c.Bytes < 1<<29 && math.Float32frombits(c.CostBits[0]) >= 0 {
				treeSeen = true
			}
		}
		plateauSeen := tu.Comm.NNodes > 1 && tu.BW[funcAllReduce][algoRing][protoSimple] > 0
		for _, part := range []struct {
			name string
			seen bool
			m    modelParts
		}{
			{"the tree correction", treeSeen, modelParts{noTreeCorrection: true}},
			{"the ring plateau", plateauSeen, modelParts{noPlateau: true}},
			{"the left-out algorithms", anySkipped(tu, capt), modelParts{noSkips: true}},
		} {
			if !part.seen {
				continue
			}
			seen[part.name] = true
			if bad := tu.check(capt, part.m); len(bad) == 0 {
				t.Errorf("%s: the model without %s passes", costs, part.name)
			}
		}
	}
	for _, name := range []string{"the tree correction", "the ring plateau", "the left-out algorithms"} {
		if !seen[name] {
			t.Errorf("no capture puts %s to the test", name)
		}
	}
}

// anySkipped says whether the capture has a cell whose bandwidth is set
// but that NCCL leaves out.
func anySkipped(tu *Tuning, capt *Capture) bool {
	for _, c := range capt.Calls {
		for a := 0; a < NumAlgos; a++ {
			for p := 0; p < NumProtos; p++ {
				if tu.BW[c.Coll][a][p] > 0 && math.Float32frombits(c.CostBits[a*NumProtos+p]) < 0 {
					return true
				}
			}
		}
	}
	return false
}

// Check reports exactly the cells that differ: a cost just outside the
// printing precision, and a cell available on one side only.
func TestCheckFindsCells(t *testing.T) {
	tu, capt := loadCapture(t, "testdata/capture/synthetic-h100x16")
	c := *capt
	c.Calls = append([]CapturedCall(nil), capt.Calls...)
	i := len(c.Calls) - 1 // AllReduce 1 GiB
	cell := c.Calls[i].CostBits[1*NumProtos+2]
	lo, hi := tu.CostBounds(Comm{Version: tu.Comm.Version, NRanks: 16, NNodes: 2, LocalRanks: 8, NChannels: 24, MinCompCap: 90},
		Call{Func: c.Calls[i].Coll, Bytes: c.Calls[i].Bytes, NumPipeOps: 1}, PrintedLatErr, PrintedBWErr)
	if got := math.Float32frombits(cell); got < lo[1][2] || got > hi[1][2] {
		t.Fatalf("Ring/Simple at 1 GiB: %g outside [%g, %g] before any change", got, lo[1][2], hi[1][2])
	}
	c.Calls[i].CostBits[1*NumProtos+2] = math.Float32bits(hi[1][2] * 1.001)
	c.Calls[0].CostBits[algoNVLS*NumProtos+protoSimple] = math.Float32bits(50) // NCCL leaves NVLS out across nodes
	bad := tu.Check(&c)
	if len(bad) != 2 || bad[0].Algo != algoNVLS || bad[0].Lo != Unavailable || bad[1].Algo != algoRing || bad[1].Proto != protoSimple {
		t.Errorf("Check: %v; want NVLS/Simple of the first call and Ring/Simple of the last", bad)
	}
	if len(bad) == 2 && !strings.Contains(bad[0].String(), "Broadcast 8 B (pipe ops 1) NVLS/Simple: NCCL 50, model unavailable") {
		t.Errorf("mismatch text %q", bad[0])
	}
}

func TestReadCaptureErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ json, want string }{
		{`{"calls":[]}`, "no calls"},
		{`{"calls":[{"coll":5,"n_ranks":2,"n_nodes":1}]}`, "call 0: coll 5"},
		{`{"calls":[{"coll":4,"n_ranks":0,"n_nodes":1}]}`, "want coll 0..4 and at least one rank and node"},
		{`{"calls":`, "unexpected end of JSON"},
	} {
		path := filepath.Join(dir, "costs.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadCapture(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want an error naming the file with %q", tc.json, err, tc.want)
		}
	}
}

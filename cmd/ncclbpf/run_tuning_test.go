package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// costIn is a cost cell of the report's inputs, in µs (-1: unavailable).
func costIn(r *jsonReport, a, p int) float64 {
	return float64(math.Float32frombits(uint32(r.in("cost[" + string(rune('0'+a)) + "][" + string(rune('0'+p)) + "]"))))
}

// The cost table is NCCL's per-call model over the built-in tables
// (internal/ncclabi/testdata/default/tuning.log): checked against
// arithmetic done by hand on the printed numbers.
func TestRunModelCosts(t *testing.T) {
	r := runJSON(t, sizeAwareObj, "--bytes", "1MiB")
	for _, tc := range []struct {
		a, p int
		want float64
	}{
		{1, 2, 56.0 + 1048576/(1000*182.9)},    // AllReduce Ring/Simple 56.0/182.9
		{0, 0, 15.2 + 1048576/(1000*42.1*0.5)}, // Tree/LL 15.2/42.1, tree correction .5 at 2^14*64 B
		{4, 2, 25.0 + 1048576/(1000*359.0)},    // NVLS/Simple
		{2, 2, -1}, {5, 2, -1}, {6, 2, -1},     // CollNet, NVLS Tree, PAT: bandwidth 0
	} {
		if got := costIn(r, tc.a, tc.p); math.Abs(got-tc.want) > 1e-3 {
			t.Errorf("AllReduce 1 MiB cost[%d][%d] = %g; want %g", tc.a, tc.p, got, tc.want)
		}
	}
	// One rank: only Ring/Simple, at 0.
	r = runJSON(t, sizeAwareObj, "--bytes", "1MiB", "--ranks", "1")
	if r.in("avail_mask") != 1<<5 || costIn(r, 1, 2) != 0 {
		t.Errorf("1 rank: avail_mask %#x, ring/simple %g; want only ring/simple at 0", r.in("avail_mask"), costIn(r, 1, 2))
	}
	// Broadcast has no Tree; --costs model refills the table after an edit.
	r = runJSON(t, sizeAwareObj, "--coll", "broadcast", "--bytes", "4KiB", "--costs", "none,model")
	if costIn(r, 0, 0) != -1 || math.Abs(costIn(r, 1, 0)-(10.8+4096/(1000*141.0))) > 1e-3 {
		t.Errorf("Broadcast 4 KiB: tree/ll %g, ring/ll %g", costIn(r, 0, 0), costIn(r, 1, 0))
	}
}

// --tuning-log reads the tables of an NCCL log: its ranks and nodes become
// the defaults, and its numbers the model's.
func TestRunTuningLog(t *testing.T) {
	def, err := os.ReadFile("../../internal/ncclabi/testdata/default/tuning.log")
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Replace(string(def), "nRanks 8 nNodes 1 localRanks 8", "nRanks 4 nNodes 2 localRanks 2", 1)
	log = strings.Replace(log, "   56.0/ 182.9 |", "   30.0/  20.0 |", 1)
	dir := t.TempDir()
	path := writeFile(t, dir, "nccl.log", log)
	r := runJSON(t, sizeAwareObj, "--tuning-log", path, "--bytes", "1MiB")
	// Two nodes: the ring plateau (x1.4) once bytes/(32 channels * 4 ranks) >= 64.
	if r.in("n_ranks") != 4 || r.in("n_nodes") != 2 || math.Abs(costIn(r, 1, 2)-(30*1.4+1048576/(1000*20.0))) > 1e-3 {
		t.Errorf("--tuning-log: ranks %d nodes %d ring/simple %g", r.in("n_ranks"), r.in("n_nodes"), costIn(r, 1, 2))
	}
	// NVLS across nodes without CollNet: left out.
	if costIn(r, 4, 2) != -1 {
		t.Errorf("--tuning-log, 2 nodes: nvls/simple %g; want unavailable", costIn(r, 4, 2))
	}
	r = runJSON(t, sizeAwareObj, "--tuning-log", path, "--ranks", "8", "--nodes", "1")
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "are of 4 ranks on 2 nodes; 8 ranks on 1 nodes change only the per-call parts") {
		t.Errorf("--tuning-log with other ranks: notes %q", r.Notes)
	}
	bad := writeFile(t, dir, "bad.log", strings.Replace(log, "   30.0/  20.0 |", "   30.0/  x |", 1))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{sizeAwareObj, "--tuning-log", bad}, "--tuning-log: " + bad + ":14: AllReduce Ring/Simple: \"30.0/  x\" is not LAT/BW"},
		{[]string{sizeAwareObj, "--tuning-log", filepath.Join(dir, "none.log")}, "--tuning-log: open " + filepath.Join(dir, "none.log")},
		{[]string{sizeAwareObj, "--tuning-log", writeFile(t, dir, "empty.log", "x\n")}, "no tuning table"},
		{[]string{latencyStatsObj, "--tuning-log", path}, "--tuning-log: hook profiler/coll_end has no cost table"},
	} {
		code, _, stderr := runCLI(append([]string{"run"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) { // as --costs and --mem @FILE: exit 2
			t.Errorf("run %q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

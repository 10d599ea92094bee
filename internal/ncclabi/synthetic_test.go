package ncclabi

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var updateSynthetic = flag.Bool("update", false, "rewrite testdata/capture/synthetic-*/costs.json from its tuning.log")

// syntheticCapture computes the costs.json of a synthetic capture: the
// calls of scripts/gpu-cost-capture.sh's sweep (every collective, 8 B to 1
// GiB), their tables NCCL's model over values that differ from the printed
// ones by less than the printing precision (a fixed pseudo-random offset per
// cell), as a real NCCL's unrounded tables do.
func syntheticCapture(t *testing.T, tu *Tuning) []byte {
	t.Helper()
	truth := *tu
	seed := uint32(12345)
	offset := func() float64 { // within ±0.049
		seed = seed*1664525 + 1013904223
		return (float64(seed>>8)/float64(1<<24)*2 - 1) * 0.049
	}
	for f := range truth.Lat {
		for a := range truth.Lat[f] {
			for p := range truth.Lat[f][a] {
				if truth.BW[f][a][p] > 0 {
					truth.Lat[f][a][p] = max(truth.Lat[f][a][p]+offset(), 0)
					truth.BW[f][a][p] += offset()
				}
			}
		}
	}
	c := Capture{MinCompCap: 90}
	for f := 0; f < NumFuncs; f++ {
		for b := uint64(8); b <= 1<<30; b *= 2 {
			comm := truth.Comm
			comm.MinCompCap = c.MinCompCap
			costs := truth.Costs(comm, Call{Func: f, Bytes: b, NumPipeOps: 1})
			call := CapturedCall{Coll: f, Bytes: b, NumPipeOps: 1, NRanks: comm.NRanks, NNodes: comm.NNodes}
			for a := range costs {
				for p := range costs[a] {
					call.CostBits[a*NumProtos+p] = math.Float32bits(costs[a][p])
				}
			}
			c.Calls = append(c.Calls, call)
		}
	}
	out, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// The synthetic captures' costs.json are what syntheticCapture makes of
// their tuning.log (go test -run TestSyntheticCapture -update rewrites them).
func TestSyntheticCapture(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/capture/synthetic-*")
	if len(dirs) == 0 {
		t.Fatal("no testdata/capture/synthetic-*")
	}
	for _, dir := range dirs {
		ts, err := ParseTuningLogFile(filepath.Join(dir, "tuning.log"))
		if err != nil {
			t.Fatal(err)
		}
		want := syntheticCapture(t, ts[0])
		path := filepath.Join(dir, "costs.json")
		if *updateSynthetic {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what its tuning.log makes (%v): go test ./internal/ncclabi -run TestSyntheticCapture -update", path, err)
		}
	}
}

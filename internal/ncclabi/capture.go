package ncclabi

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/ncclbpf/ncclbpf/hook"
)

// CapturedCall is one getCollInfo call as a recording tuner policy saw it
// (testhost/gpu/cost_record.bpf.c): the inputs and NCCL's cost table.
type CapturedCall struct {
	Coll       int        `json:"coll"` // NCCLBPF_COLL_*: NCCL's function index
	Bytes      uint64     `json:"n_bytes"`
	NumPipeOps int        `json:"num_pipe_ops"`
	NRanks     int        `json:"n_ranks"`
	NNodes     int        `json:"n_nodes"`
	CostBits   [21]uint32 `json:"cost_bits"` // float bits, algorithm-major
}

// Capture is a costs.json file: the calls of one communicator, and what
// the capture knew of its ranks that NCCL's log does not say.
type Capture struct {
	MinCompCap int            `json:"min_comp_cap,omitempty"` // e.g. 90; 0 if not known
	Calls      []CapturedCall `json:"calls"`
}

// ReadCapture reads a costs.json file.
func ReadCapture(path string) (*Capture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Capture
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(c.Calls) == 0 {
		return nil, fmt.Errorf("%s: no calls", path)
	}
	for i, call := range c.Calls {
		if call.Coll < 0 || call.Coll >= NumFuncs || call.NRanks < 1 || call.NNodes < 1 {
			return nil, fmt.Errorf("%s: call %d: coll %d, n_ranks %d, n_nodes %d: want coll 0..4 and at least one rank and node",
				path, i, call.Coll, call.NRanks, call.NNodes)
		}
	}
	return &c, nil
}

// Mismatch is one cell where NCCL's cost differs from the model's range.
type Mismatch struct {
	Call   CapturedCall
	Algo   int
	Proto  int
	NCCL   float32 // NCCL's cost (Unavailable: -1)
	Lo, Hi float32 // the model's range (Unavailable in both: not offered)
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s %d B (pipe ops %d) %s/%s: NCCL %g, model %s", hook.NCCLCollNames[m.Call.Coll], m.Call.Bytes,
		m.Call.NumPipeOps, hook.NCCLAlgoNames[m.Algo], hook.NCCLProtoNames[m.Proto], m.NCCL, modelRange(m.Lo, m.Hi))
}

func modelRange(lo, hi float32) string {
	if lo == Unavailable {
		return "unavailable"
	}
	return fmt.Sprintf("[%g, %g]", lo, hi)
}

// Printing precision of NCCL's tables (%8.1f/%6.1f): a printed value is
// within half a unit of the last digit of the value NCCL uses.
const (
	PrintedLatErr = 0.05 // µs
	PrintedBWErr  = 0.05 // GB/s
)

// Check compares every cell of every captured call with the model
// computed from t for the call's ranks and nodes, allowing the tables'
// printing precision, and returns the cells outside it (availability
// differences included).
func (t *Tuning) Check(c *Capture) []Mismatch {
	return t.check(c, modelParts{})
}

func (t *Tuning) check(c *Capture, m modelParts) []Mismatch {
	var out []Mismatch
	for _, call := range c.Calls {
		comm := t.Comm
		comm.NRanks, comm.NNodes = call.NRanks, call.NNodes
		if c.MinCompCap != 0 {
			comm.MinCompCap = c.MinCompCap
		}
		lo, hi := t.costBounds(comm, Call{Func: call.Coll, Bytes: call.Bytes, NumPipeOps: call.NumPipeOps},
			PrintedLatErr, PrintedBWErr, m)
		for a := 0; a < NumAlgos; a++ {
			for p := 0; p < NumProtos; p++ {
				got := math.Float32frombits(call.CostBits[a*NumProtos+p])
				if !within(got, lo[a][p], hi[a][p]) {
					out = append(out, Mismatch{call, a, p, got, lo[a][p], hi[a][p]})
				}
			}
		}
	}
	return out
}

// within says whether NCCL's cost got lies in the model's [lo, hi], up to
// float rounding; an unavailable cell must be unavailable in both.
func within(got, lo, hi float32) bool {
	if lo == Unavailable || got < 0 {
		return lo == Unavailable && got == Unavailable
	}
	const rel = 1e-5
	return float64(got) >= float64(lo)*(1-rel) && float64(got) <= float64(hi)*(1+rel)
}

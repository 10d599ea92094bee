package ncclabi

// This file is what NCCL does with a tuner policy's decision, per tuner
// ABI version, without NCCL or cgo: the cells of the cost table, the
// decision a context holds, and Apply. The C shim of package plugin
// applies decisions the same way; the tests of plugin/e2e compare.

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/ncclbpf/ncclbpf/hook"
)

// Cells is the number of (algorithm, protocol) cells of NCCL's cost table.
const Cells = hook.TunerCostCells

// MaxChannels is the most channels the plugin passes to NCCL.
const MaxChannels = 64

// TunerInput is one getCollInfo call as the tuner hook sees it: the
// fields of struct ncclbpf_tuner_ctx. Cost holds NCCL's table row-major
// (algorithm, protocol), -1 for unavailable cells.
type TunerInput struct {
	CommID, CallSeq            uint64
	Coll                       int
	NBytes                     uint64
	NumPipeOps, RegBuff        int
	NRanks, NNodes             int
	NvlDomains, MinNvl, MaxNvl int
	ABI                        int
	Cost                       [Cells]float32
}

// Context encodes in as the bytes of struct ncclbpf_tuner_ctx (160 bytes),
// with the outputs at their "leave it to NCCL" values, exactly as the shim
// fills it: for `ncclbpf run` and tests that run a tuner program offline.
func (in TunerInput) Context() []byte {
	b := make([]byte, hook.TunerCtxSize)
	le := binary.LittleEndian
	le.PutUint64(b[hook.TunerCommIDOff:], in.CommID)
	le.PutUint64(b[hook.TunerCallSeqOff:], in.CallSeq)
	le.PutUint64(b[hook.TunerNBytesOff:], in.NBytes)
	le.PutUint32(b[hook.TunerCollTypeOff:], uint32(in.Coll))
	le.PutUint32(b[hook.TunerNumPipeOpsOff:], uint32(int32(in.NumPipeOps)))
	le.PutUint32(b[hook.TunerRegBuffOff:], uint32(int32(in.RegBuff)))
	le.PutUint32(b[hook.TunerNRanksOff:], uint32(in.NRanks))
	le.PutUint32(b[hook.TunerNNodesOff:], uint32(in.NNodes))
	le.PutUint32(b[hook.TunerNNvlDomainsOff:], uint32(int32(in.NvlDomains)))
	le.PutUint32(b[hook.TunerMinRanksPerNvlDomainOff:], uint32(int32(in.MinNvl)))
	le.PutUint32(b[hook.TunerMaxRanksPerNvlDomainOff:], uint32(int32(in.MaxNvl)))
	le.PutUint32(b[hook.TunerABIVersionOff:], uint32(in.ABI))
	var mask uint32
	for i, c := range in.Cost {
		bits := math.Float32bits(c)
		le.PutUint32(b[hook.TunerCostOff+4*i:], bits)
		if bits>>31 == 0 {
			mask |= 1 << i
		}
	}
	le.PutUint32(b[hook.TunerAvailMaskOff:], mask)
	le.PutUint32(b[hook.TunerAlgorithmOff:], 0xffffffff) // algorithm: leave it
	le.PutUint32(b[hook.TunerProtocolOff:], 0xffffffff)  // protocol: leave it
	le.PutUint32(b[hook.TunerNChannelsOff:], 0)          // channels: leave it
	return b
}

// Decision is what a tuner program wrote into its context's outputs.
type Decision struct {
	Algorithm, Protocol, Channels int
}

// DecodeDecision reads the outputs of a tuner context after a run.
func DecodeDecision(ctx []byte) (Decision, error) {
	if len(ctx) < hook.TunerCtxSize {
		return Decision{}, fmt.Errorf("tuner context: %d bytes, want %d", len(ctx), hook.TunerCtxSize)
	}
	le := binary.LittleEndian
	return Decision{
		Algorithm: int(int32(le.Uint32(ctx[hook.TunerAlgorithmOff:]))),
		Protocol:  int(int32(le.Uint32(ctx[hook.TunerProtocolOff:]))),
		Channels:  int(int32(le.Uint32(ctx[hook.TunerNChannelsOff:]))),
	}, nil
}

// Outcome is what NCCL ends up doing after the plugin applied (or dropped)
// a decision: the shim's rules in Go (plugin/tuner.c is authoritative).
type Outcome struct {
	// Table is NCCL's cost table after the plugin.
	Table [Cells]float32
	// Channels is what NCCL receives in *nChannels (0: its default).
	Channels int
	// Applied is false when the decision left everything to NCCL or was
	// dropped; Dropped says why it was dropped, "" otherwise.
	Applied bool
	Dropped string
	// ChannelsDropped is true when the decision's channel count was not
	// passed to NCCL because NCCL will run the collective with CollNet,
	// which takes the count unchecked as its channel span (the shim keeps
	// NCCL's default there); the rest of the decision is applied.
	ChannelsDropped bool
	// Algorithm and Protocol are NCCL's pick from Table (-1 if none).
	Algorithm, Protocol int
}

// Apply applies the program's return value ret (r0 at exit) and decision
// d to table as libncclbpf.so does for tuner ABI v3 and later, then picks
// as NCCL does (the strictly cheapest non-negative cell, algorithms then
// protocols in order). Like the shim, it reads the low 32 bits of ret as
// the C int the hook returns.
func Apply(table [Cells]float32, ret uint64, d Decision) Outcome {
	return ApplyABI(table, ret, d, 0)
}

// ApplyABI is Apply for a caller of tuner ABI version abi (the context's
// abi_version): version 2 has no way to pass an algorithm without a
// protocol or the reverse, so the shim drops such a decision.
func ApplyABI(table [Cells]float32, ret uint64, d Decision, abi int) Outcome {
	o := Outcome{Table: table}
	a, p, ch := d.Algorithm, d.Protocol, d.Channels
	switch {
	case int32(uint32(ret)) != 0 || (a == -1 && p == -1 && ch == 0):
	case a < -1 || a >= len(hook.NCCLAlgoNames) || p < -1 || p >= len(hook.NCCLProtoNames):
		o.Dropped = "algorithm/protocol outside NCCL's table"
	case ch < 0:
		o.Dropped = "negative channel count"
	case a >= 0 && p >= 0 && !(table[a*3+p] >= 0):
		o.Dropped = "the chosen cell is unavailable (-1.0)"
	default:
		if a >= 0 && p >= 0 {
			o.Table[a*3+p] = 0
		} else if a >= 0 || p >= 0 {
			if abi == 2 {
				o.Dropped = "tuner v2 cannot take an algorithm without a protocol or the reverse"
				break
			}
			left := 0
			for i := 0; i < Cells; i++ {
				if ((a >= 0 && i/3 == a) || (p >= 0 && i%3 == p)) && table[i] >= 0 {
					left++
				}
			}
			if left == 0 {
				o.Dropped = "no available cell in the chosen row/column"
				break
			}
			for i := 0; i < Cells; i++ {
				in := (a >= 0 && i/3 == a) || (p >= 0 && i%3 == p)
				if !in && table[i] >= 0 {
					o.Table[i] = -1
				}
			}
		}
		o.Channels = min(ch, MaxChannels)
		o.Applied = true
	}
	o.Algorithm, o.Protocol = Pick(o.Table)
	if o.Channels > 0 && isCollNet(o.Algorithm) {
		o.Channels, o.ChannelsDropped = 0, true
	}
	return o
}

// isCollNet says whether algorithm a is CollNet Direct or CollNet Chain.
func isCollNet(a int) bool { return a == 2 || a == 3 }

// Pick returns the cell NCCL chooses from table, or -1, -1.
func Pick(table [Cells]float32) (algo, proto int) {
	algo, proto = -1, -1
	best := float32(math.MaxFloat32)
	for i, c := range table {
		if c >= 0 && c < best {
			best, algo, proto = c, i/3, i%3
		}
	}
	return algo, proto
}

// CellName names cell (a, p), e.g. "Ring/Simple".
func CellName(a, p int) string {
	if a < 0 || a >= len(hook.NCCLAlgoNames) || p < 0 || p >= len(hook.NCCLProtoNames) {
		return fmt.Sprintf("(%d,%d)", a, p)
	}
	return hook.NCCLAlgoNames[a] + "/" + hook.NCCLProtoNames[p]
}

// ParseColl parses a collective name (case-insensitive, as in the rules
// format or NCCL's spelling) or number.
func ParseColl(s string) (int, error) {
	for i, n := range hook.NCCLCollNames {
		if strings.EqualFold(s, n) {
			return i, nil
		}
	}
	low := strings.ToLower(s)
	for i, n := range hook.CollNames {
		if low == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("collective %q: want one of %s", s, strings.Join(hook.CollNames, ", "))
}

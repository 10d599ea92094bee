package ncclabi

import (
	"math"
	"math/bits"
)

// The per-call cost model: what NCCL hands a tuner's getCollInfo as its
// cost table (float µs per algorithm and protocol, -1 = unavailable),
// computed from the tables of the log (Tuning) and the communicator's
// facts. It follows NCCL 2.28 to 2.30 (src/enqueue.cc updateCollCostTable
// and src/graph/tuning.cc ncclTopoGetAlgoTime), written from their
// description:
//
//   - a communicator of one rank: only Ring/Simple, at cost 0;
//   - a cell is skipped (left -1) for CollNet without CollNet support or
//     with more than 8 local ranks, NVLS and NVLS Tree without NVLS
//     support (or, except for AllReduce, with more than 32 local ranks),
//     NVLS across nodes without CollNet, and PAT for a ReduceScatter with a
//     scaling operation (average, PreMulSum);
//   - a cell whose bandwidth is 0 is -1;
//   - otherwise time = lat * latCount + nBytes / (1000 * bw), in float as
//     NCCL computes it, where
//   - AllReduce Tree's bandwidth is scaled by a correction factor per power
//     of two of nBytes/64 (and NVLS Tree's on x86 hosts with compute
//     capability 10.0 or more, NCCL 2.29+);
//   - AllReduce Ring/Simple across nodes has its latency scaled by 1.4 (1.9
//     below compute capability 8.0) once nBytes/(nChannels*nRanks) >= 64;
//   - latCount is numPipeOps for Ring, else numPipeOps over the number of
//     collectives a work batch holds (8 from NCCL 2.30, 10 before), rounded up;
//   - FP8 data on more than 8 ranks: Ring costs 1024 times more.

// Algorithm, protocol and function indexes in NCCL's order.
const (
	algoTree, algoRing, algoCollNetDirect, algoCollNetChain, algoNVLS, algoNVLSTree, algoPAT = 0, 1, 2, 3, 4, 5, 6
	protoLL, protoLL128, protoSimple                                                         = 0, 1, 2
	funcReduceScatter, funcAllReduce                                                         = 3, 4
)

// Unavailable is the cost NCCL gives a cell it does not offer
// (NCCL_ALGO_PROTO_IGNORE).
const Unavailable = float32(-1)

// Call is one collective as NCCL's enqueue path sees it when it builds the
// cost table.
type Call struct {
	Func       int    // 0 Broadcast, 1 Reduce, 2 AllGather, 3 ReduceScatter, 4 AllReduce
	Bytes      uint64 // nBytes as the tuner gets it (AllGather, ReduceScatter: the whole buffer)
	NumPipeOps int    // collectives pipelined per channel (1 if 0)
	FP8        bool   // the data type is an FP8 type
	ScaledOp   bool   // the operation scales (ncclAvg, a PreMulSum): no PAT for ReduceScatter
}

// treeCorrection is NCCL's static factor on Tree's bandwidth, by protocol
// and log2(nBytes/64) (64 B up to 512 MiB); NCCL 2.28 reads the first 23
// columns, 2.29+ 24 (the last only for NVLS Tree).
var treeCorrection = [NumProtos][24]float32{
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
}

// modelParts switches the model's corrections off, one by one, for the
// tests that show a wrong model is caught; the zero value is NCCL's model.
type modelParts struct {
	noTreeCorrection, noPlateau, noSkips bool
}

// Costs returns the cost table NCCL hands the tuner for call on a
// communicator described by comm (usually t.Comm, or a copy with other
// ranks and nodes), by algorithm and protocol.
func (t *Tuning) Costs(comm Comm, call Call) [NumAlgos][NumProtos]float32 {
	return t.costs(comm, call, 0, 0, modelParts{})
}

// CostBounds returns the lowest and highest cost of each cell for any
// tables within latErr µs and bwErr GB/s of the printed ones (NCCL prints
// one decimal: 0.05 each); an unavailable cell is Unavailable in both.
func (t *Tuning) CostBounds(comm Comm, call Call, latErr, bwErr float64) (lo, hi [NumAlgos][NumProtos]float32) {
	return t.costBounds(comm, call, latErr, bwErr, modelParts{})
}

func (t *Tuning) costBounds(comm Comm, call Call, latErr, bwErr float64, m modelParts) (lo, hi [NumAlgos][NumProtos]float32) {
	return t.costs(comm, call, -latErr, bwErr, m), t.costs(comm, call, latErr, -bwErr, m)
}

// costs computes the table with every printed latency moved by dLat and
// every nonzero bandwidth by dBW (a bandwidth that would reach 0 gives an
// infinite time).
func (t *Tuning) costs(comm Comm, call Call, dLat, dBW float64, m modelParts) [NumAlgos][NumProtos]float32 {
	var table [NumAlgos][NumProtos]float32
	for a := range table {
		for p := range table[a] {
			table[a][p] = Unavailable
		}
	}
	f := call.Func
	if f < 0 || f >= NumFuncs {
		return table
	}
	if comm.NRanks == 1 {
		table[algoRing][protoSimple] = 0
		return table
	}
	collNet, nvls := t.supports(f)
	for a := 0; a < NumAlgos; a++ {
		if !m.noSkips && skipAlgo(a, comm, call, collNet, nvls) {
			continue
		}
		for p := 0; p < NumProtos; p++ {
			if t.BW[f][a][p] == 0 {
				continue
			}
			lat := float32(max(t.Lat[f][a][p]+dLat, 0))
			bw := float32(t.BW[f][a][p] + dBW)
			time := algoTime(comm, call, a, p, lat, bw, m)
			if call.FP8 && a == algoRing && comm.NRanks > 8 {
				time *= 1024
			}
			table[a][p] = time
		}
	}
	return table
}

// supports says whether the communicator offers CollNet and NVLS for
// function f: NCCL's per-call support flags, as the tables show them (a
// communicator without them has zero bandwidth in every cell).
func (t *Tuning) supports(f int) (collNet, nvls bool) {
	for p := 0; p < NumProtos; p++ {
		collNet = collNet || t.BW[f][algoCollNetDirect][p] > 0 || t.BW[f][algoCollNetChain][p] > 0
		nvls = nvls || t.BW[f][algoNVLS][p] > 0 || t.BW[f][algoNVLSTree][p] > 0
	}
	return collNet, nvls
}

// skipAlgo says whether NCCL leaves algorithm a out of the call's table.
func skipAlgo(a int, comm Comm, call Call, collNet, nvls bool) bool {
	const maxDirectArity, maxNVLSArity = 7, 32
	switch a {
	case algoCollNetDirect, algoCollNetChain:
		return !collNet || comm.LocalRanks > maxDirectArity+1
	case algoNVLS, algoNVLSTree:
		if !nvls || (call.Func != funcAllReduce && comm.LocalRanks > maxNVLSArity) {
			return true
		}
		return a == algoNVLS && !collNet && comm.NNodes > 1
	case algoPAT:
		return call.Func == funcReduceScatter && call.ScaledOp
	}
	return false
}

// algoTime is ncclTopoGetAlgoTime for one available cell.
func algoTime(comm Comm, call Call, a, p int, lat, bw float32, m modelParts) float32 {
	if bw <= 0 {
		return float32(math.Inf(1))
	}
	logSize := log2Down(call.Bytes >> 6)
	if !m.noTreeCorrection && call.Func == funcAllReduce && logSize >= 0 {
		if a == algoTree && logSize < 23 {
			bw = float32(bw * treeCorrection[p][logSize])
		}
		if a == algoNVLSTree && logSize < 24 && comm.atLeast(2, 29) && comm.MinCompCap >= 100 && comm.CPUArch == "x86" {
			bw = float32(bw * treeCorrection[p][logSize])
		}
	}
	if !m.noPlateau && a == algoRing && p == protoSimple && comm.NNodes > 1 && call.Func == funcAllReduce &&
		call.Bytes/uint64(max(comm.NChannels, 1)*max(comm.NRanks, 1)) >= 64 {
		factor := 1.4 // plateau effect of the ring
		if comm.MinCompCap != 0 && comm.MinCompCap < 80 {
			factor = 1.9
		}
		lat = float32(float64(lat) * factor)
	}
	pipeOps := max(call.NumPipeOps, 1)
	latCount := pipeOps
	if a != algoRing {
		batch := 8 // collectives per work batch: 1024 B / sizeof(ncclDevWorkColl), 128 B from 2.30
		if !comm.atLeast(2, 30) {
			batch = 10 // 96 B before
		}
		latCount = (pipeOps + batch - 1) / batch
	}
	return float32(lat*float32(latCount)) + float32(float32(call.Bytes)/float32(1000*bw))
}

// atLeast says whether the communicator runs NCCL major.minor or newer; an
// unknown version counts as the newest.
func (c Comm) atLeast(major, minor int) bool {
	if c.Version == [3]int{} {
		return true
	}
	return c.Version[0] > major || (c.Version[0] == major && c.Version[1] >= minor)
}

// log2Down is floor(log2(x)), -1 for 0.
func log2Down(x uint64) int {
	return bits.Len64(x) - 1
}

package verifier

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The two-run oracle. Rank uniformity is a property of two runs: for every
// program the verifier accepts (with the bundle's profiler program, which
// writes one map), two runs on the interpreter with the same uniform
// inputs and the same contents of the maps no program writes, but
// different [local] inputs, helper results (clocks, random numbers,
// bpf_printk's rate limit), thread slots and contents of the local maps,
// must decide alike: the same decision outputs and the same return value.
//
// What the oracle varies is local by the semantics, not by the verifier's
// say: a map is local when the profiler program writes it, when it is a
// per-CPU map, or when a run of the program itself was seen to change it
// (contents) or to look it up (LRU maps, whose lookups reorder them).
// A difference is therefore a verifier that accepted a divergent program.

// twinSpecs are the bundle's maps (see twinCfg...).
func twinSpecs() []*loader.MapSpec {
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	var hashInit []loader.MapKV
	for k := uint32(0); k < 4; k++ {
		hashInit = append(hashInit, loader.MapKV{Key: u32(k), Value: u64(uint64(10 + k))})
	}
	return []*loader.MapSpec{
		twinCfg:      {Name: "cfg", Type: loader.MapTypeArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		twinStatsMap: {Name: "stats", Type: loader.MapTypeArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		twinHash:     {Name: "hashu", Type: loader.MapTypeHash, KeySize: 4, ValueSize: 8, MaxEntries: 8, Contents: hashInit},
		twinLRU:      {Name: "lru", Type: loader.MapTypeLRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 8, Contents: hashInit},
		twinPCPU:     {Name: "pcpu", Type: loader.MapTypePerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		twinMemo:     {Name: "memo", Type: loader.MapTypeHash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		twinRodata:   {Name: ".rodata", Type: loader.MapTypeArray, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: MapFlagReadOnlyProg, Freeze: true, Contents: []loader.MapKV{{Key: u32(0), Value: u64(3)}}},
	}
}

// twinProfiler writes stats: it makes that map local for the bundle.
const twinProfiler = `
stw [%r10-4], 1
lddw %r1, map(1)
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, out
stdw [%r0+0], 7
out:
mov %r0, 0
exit
`

// twinEnv holds the live maps and two threads (two thread slots) that run
// the program, one for each side.
type twinEnv struct {
	specs  []*loader.MapSpec
	maps   []*maps.Map
	refs   []vm.MapRef
	prof   []asm.Instruction
	sides  [2]chan func()
	lruHit bool // a run looked the LRU map up
}

func newTwinEnv(t testing.TB) *twinEnv {
	e := &twinEnv{specs: twinSpecs()}
	for _, s := range e.specs {
		m, err := maps.New(*s)
		if err != nil {
			t.Fatal(err)
		}
		e.maps = append(e.maps, m)
		e.refs = append(e.refs, m.Ref())
	}
	var err error
	if e.prof, err = asm.Assemble(twinProfiler); err != nil {
		t.Fatal(err)
	}
	for i := range e.sides {
		ch := make(chan func())
		e.sides[i] = ch
		go func() {
			runtime.LockOSThread() // one OS thread, one thread slot, per side
			for f := range ch {
				f()
			}
		}()
	}
	return e
}

func (e *twinEnv) close() {
	for _, ch := range e.sides {
		close(ch)
	}
	for _, m := range e.maps {
		m.Close()
	}
}

// on runs f on side i's thread.
func (e *twinEnv) on(i int, f func()) {
	done := make(chan struct{})
	e.sides[i] <- func() { f(); close(done) }
	<-done
}

// snapshot returns the contents of every map (per-CPU values of every
// slot), to tell which a run changed.
func (e *twinEnv) snapshot() [][]byte {
	out := make([][]byte, len(e.maps))
	for i, m := range e.maps {
		var b bytes.Buffer
		m.Iterate(func(k, v []byte) bool { b.Write(k); b.Write(v); return true })
		out[i] = b.Bytes()
	}
	return out
}

// fill sets the contents of map i from rng (the frozen map keeps its own).
func (e *twinEnv) fill(t testing.TB, i int, rng *rand.Rand) {
	m, s := e.maps[i], e.specs[i]
	if s.Freeze {
		return
	}
	if s.Type == loader.MapTypeHash || s.Type == loader.MapTypeLRUHash {
		keys, _ := m.Keys()
		for _, k := range keys {
			m.Delete(k)
		}
		for k := uint32(0); k < s.MaxEntries; k++ {
			if rng.IntN(2) == 0 {
				continue
			}
			if err := m.Update(binary.LittleEndian.AppendUint32(nil, k), binary.LittleEndian.AppendUint64(nil, rng.Uint64N(16)), maps.UpdateAny); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for k := uint32(0); k < s.MaxEntries; k++ {
		v := make([]byte, m.ValueBufSize())
		for j := 0; j+8 <= len(v); j += 8 {
			binary.LittleEndian.PutUint64(v[j:], rng.Uint64N(16))
		}
		if err := m.Update(binary.LittleEndian.AppendUint32(nil, k), v, maps.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
}

// twinOutcome is what a run decided.
type twinOutcome struct {
	r0   uint64
	outs []byte
	err  error
}

func (o twinOutcome) String() string {
	return fmt.Sprintf("r0=%d outputs=%x err=%v", o.r0, o.outs, o.err)
}

// twinStats counts what the oracle saw.
type twinStats struct {
	programs, accepted   int
	uniform, uniformOK   int
	uniformE033          int // uniform programs refused as rank-divergent
	comparisons, failing int
	firstFailure         string
	firstFalseAlarm      string
}

func (s *twinStats) add(o twinStats) {
	s.programs += o.programs
	s.accepted += o.accepted
	s.uniform += o.uniform
	s.uniformOK += o.uniformOK
	s.uniformE033 += o.uniformE033
	s.comparisons += o.comparisons
	s.failing += o.failing
	if s.firstFailure == "" {
		s.firstFailure = o.firstFailure
	}
	if s.firstFalseAlarm == "" {
		s.firstFalseAlarm = o.firstFalseAlarm
	}
}

// twinCheck verifies program i of seed and, when the verifier accepts it,
// runs it twice per round and compares the decisions.
func (e *twinEnv) twinCheck(t testing.TB, seed uint64, i int, st *twinStats) {
	src, h, uniform := twinProgram(seed, i)
	insns, err := asm.Assemble(src)
	if err != nil {
		t.Fatalf("program %d: generator produced bad assembly: %v\n%s", i, err, src)
	}
	st.programs++
	if uniform {
		st.uniform++
	}
	prof := hook.Get(hook.ProfilerCollEnd)
	// a smaller budget than the default: the oracle checks what is
	// accepted, and programs that would take longer are few
	units := []Unit{{Insns: insns, Config: Config{Hook: h, Complexity: 100_000}}, {Insns: e.prof, Config: Config{Hook: prof, Complexity: 100_000}}}
	_, errs, _ := VerifyTogether(e.specs, units)
	if errs[1] != nil {
		t.Fatalf("the bundle's profiler program is refused: %v", errs[1])
	}
	if errs[0] != nil {
		ve, ok := errs[0].(*Error)
		if !ok {
			t.Fatalf("program %d: %v", i, errs[0])
		}
		if uniform && ve.Code == RankDivergent {
			st.uniformE033++
			if st.firstFalseAlarm == "" {
				st.firstFalseAlarm = fmt.Sprintf("program %d of seed %d: %v\n%s", i, seed, ve, src)
			}
		}
		return
	}
	st.accepted++
	if uniform {
		st.uniformOK++
	}
	lruHandle := uint64(e.maps[twinLRU].Handle())
	e.lruHit = false
	eng := vm.NewInterpreter(vm.WithMemLayout(vm.ContextLayout(&h.Context)...), vm.WithTrace(func(ts *vm.TraceState) {
		if in := insns[ts.PC]; in.Op == asm.OpCall && in.Src != asm.PseudoCall && in.Imm == 1 && ts.Regs[asm.R1] == lruHandle {
			e.lruHit = true
		}
	}))
	exe, err := eng.Compile(&vm.Program{Name: "twin", Insns: insns, Maps: e.refs, Helpers: maps.HelperTable()})
	if err != nil {
		t.Fatalf("program %d: accepted but does not compile: %v", i, err)
	}
	defer exe.Close()
	rng := rand.New(rand.NewPCG(seed^0x7417, uint64(i)))
	ctxOf := func(uni *rand.Rand, loc uint32) []byte {
		c := make([]byte, h.Context.Size)
		for _, f := range h.Context.Fields {
			for k := 0; k < max(f.Array, 1); k++ {
				off := f.Offset + k*f.Size
				v := uni.Uint64N(64)
				if f.Access&hook.Write != 0 {
					v = ^uint64(0) // outputs start at "leave it to NCCL"
					if f.Name == "n_channels" || f.Name == "new_chunk_size" {
						v = 0
					}
				}
				if f.Scope == hook.RankLocal {
					v = uint64(loc)
				}
				for j := 0; j < f.Size; j++ {
					c[off+j] = byte(v >> (8 * j))
				}
			}
		}
		return c
	}
	outputs := func(c []byte) []byte {
		var o []byte
		for _, f := range h.Context.Fields {
			if f.Access&hook.Write != 0 {
				o = append(o, c[f.Offset:f.Offset+f.Size]...)
			}
		}
		return o
	}
	run := func(side int, c []byte) (out twinOutcome) {
		e.on(side, func() {
			out.r0, out.err = exe.Run(c)
		})
		out.outs = outputs(c)
		return out
	}
	// which maps are local: the profiler's, the per-CPU one, and those a
	// run of the program changes or reorders (observed on a few runs)
	local := make([]bool, twinMaps)
	local[twinStatsMap], local[twinPCPU] = true, true
	for k := 0; k < 3; k++ {
		for m := range e.maps {
			e.fill(t, m, rand.New(rand.NewPCG(uint64(k), uint64(m))))
		}
		before := e.snapshot()
		run(k%2, ctxOf(rng, rng.Uint32N(64)))
		for m, after := range e.snapshot() {
			if !bytes.Equal(before[m], after) {
				local[m] = true
			}
		}
	}
	if e.lruHit {
		local[twinLRU] = true
	}
	for round := 0; round < 2; round++ {
		uniSeed := rng.Uint64()
		var res [2]twinOutcome
		for side := 0; side < 2; side++ {
			for m := range e.maps {
				seed := uniSeed
				if local[m] {
					seed = rng.Uint64()
				}
				e.fill(t, m, rand.New(rand.NewPCG(seed, uint64(m))))
			}
			// the rate limit lets every line through on one side and
			// drops most on the other
			if side == 0 {
				maps.SetPrintkRate(0, 0)
			} else {
				maps.SetPrintkRate(1, 1)
			}
			res[side] = run(side, ctxOf(rand.New(rand.NewPCG(uniSeed, 1)), rng.Uint32()))
		}
		st.comparisons++
		if res[0].err != nil || res[1].err != nil || res[0].r0 != res[1].r0 || !bytes.Equal(res[0].outs, res[1].outs) {
			st.failing++
			if st.firstFailure == "" {
				st.firstFailure = fmt.Sprintf("program %d of seed %d (hook %s, uniform by construction: %v), accepted, decides differently on two runs:\n  run A: %v\n  run B: %v\n  local maps: %v\n%s",
					i, seed, h.Name, uniform, res[0], res[1], local, numberedSrc(src))
			}
			return
		}
	}
}

func numberedSrc(src string) string {
	insns, _ := asm.Assemble(src)
	var b bytes.Buffer
	b.WriteString(src)
	fmt.Fprintf(&b, "(%d instructions)\n", len(insns))
	return b.String()
}

// twinRun checks programs [0, n) of seed, on one worker per CPU, and
// returns what it saw.
func twinRun(t testing.TB, seed uint64, n int) twinStats {
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	defer maps.SetPrintkRate(20, 40)
	workers := min(runtime.GOMAXPROCS(0), 8)
	parts := make([]twinStats, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex // DrainPrintk
	for w := range workers {
		e := newTwinEnv(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer e.close()
			for i := w; i < n; i += workers {
				e.twinCheck(t, seed, i, &parts[w])
				if i%512 < workers {
					mu.Lock()
					maps.DrainPrintk()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	maps.DrainPrintk()
	var st twinStats
	for _, p := range parts {
		st.add(p)
	}
	return st
}

// TestTwoRunOracle: 10,000 random tuner and chunk_size programs; every
// one the verifier accepts decides alike on two runs that differ only in
// local data. NCCLBPF_TWIN_PROGRAMS sets the count (the long run: one
// million), NCCLBPF_TWIN_SEED the seed.
func TestTwoRunOracle(t *testing.T) {
	n, seed := 10000, uint64(1)
	if testing.Short() {
		n = 2000
	}
	if v := os.Getenv(envconfig.TwinPrograms); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if v := os.Getenv(envconfig.TwinSeed); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	st := twinRun(t, seed, n)
	t.Logf("%d programs, %d accepted (%.1f%%), %d two-run comparisons, %d divergent; uniform by construction: %d, accepted %d (%.2f%%), refused as rank-divergent %d",
		st.programs, st.accepted, 100*float64(st.accepted)/float64(max(st.programs, 1)), st.comparisons, st.failing,
		st.uniform, st.uniformOK, 100*float64(st.uniformOK)/float64(max(st.uniform, 1)), st.uniformE033)
	if st.failing > 0 {
		t.Fatalf("%d accepted programs decide differently on two runs; the first:\n%s", st.failing, st.firstFailure)
	}
	// precision: a uniform program refused as divergent is a false alarm
	if st.uniformE033*100 > st.uniform {
		t.Errorf("%d of %d uniform programs refused as rank-divergent (over 1%%); the first:\n%s", st.uniformE033, st.uniform, st.firstFalseAlarm)
	}
	if st.accepted < st.programs/5 {
		t.Errorf("only %d of %d programs accepted: the oracle compares too few", st.accepted, st.programs)
	}
}

// TestTwoRunOracleCatchesNoRegionRule: a verifier without the region
// rule (flow.go) accepts divergent programs, and the oracle finds them.
func TestTwoRunOracleCatchesNoRegionRule(t *testing.T) {
	dropRegionRule = true
	defer func() { dropRegionRule = false }()
	st := twinRun(t, 1, 2000)
	if st.failing == 0 {
		t.Fatalf("without the region rule, %d accepted programs all decide alike on two runs: the oracle cannot fail", st.accepted)
	}
	t.Logf("without the region rule: %d of %d accepted programs decide differently; the first:\n%s", st.failing, st.accepted, st.firstFailure)
}

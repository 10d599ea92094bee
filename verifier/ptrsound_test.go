package verifier_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The pointer soundness oracle: programs from genPtrProgram that the
// verifier accepts run on random contexts and random map contents, each
// input three times:
//
//  A. on the interpreter with the provenance oracle (shadow): no trap, no
//     shadow violation, r0 within the hook's range on all 64 bits, the
//     program ends within its budget;
//  B. on the interpreter again, with other maps (same contents) and the
//     context at another address: everything observable (r0, the context,
//     the maps, the ring buffer records, the printk lines) must be the
//     same as in A, or the program's behaviour depends on an address;
//  C. on the x86-64 JIT with a third set of maps: the same again.
//
// C runs native code; a program the verifier wrongly accepts may crash
// the process. So all of this runs in a child process (the test binary
// run again with NCCLBPF_PTRGEN_WORKER set), which announces each program
// before running it on the JIT; the parent reports a crash as a failure
// of the program announced last and starts a new child after it. C runs
// only for inputs that passed A and B.
//
// `go test ./verifier` checks ptrGenDefault programs (-short: fewer).
// NCCLBPF_PTRGEN_N=1000000 checks that many (scripts/test-long.sh),
// NCCLBPF_PTRGEN_SEED picks another seed, and NCCLBPF_PTRGEN_FINDINGS=file
// appends each failing program, minimized, to file in the assembler
// format of testdata/verifier/asm.

const (
	ptrGenDefault = 3000
	ptrGenShort   = 500
	ptrRuns       = 4   // inputs per accepted program
	ptrBudget     = 1e5 // instructions per run
	ptrCtxSlack   = 64  // the context moves inside a larger buffer
	ptrCtxSize    = 72  // testCtx.Size
	ptrArrBytes   = 16 * 48
)

// ptrStats is what a worker reports.
type ptrStats struct {
	Programs, Accepted, Runs int
	Codes                    map[string]int // rejections by code
	Generated                map[string]int // programs per construction tag
	AcceptedTags             map[string]int // accepted programs per tag
	Failures                 int
}

// ptrEnv is one set of live maps with the asmMaps layout.
type ptrEnv struct {
	live []*maps.Map
	refs []vm.MapRef
}

func newPtrEnv() (*ptrEnv, error) {
	e := &ptrEnv{}
	for _, s := range asmMapSpecs() {
		m, err := maps.New(s)
		if err != nil {
			e.close()
			return nil, fmt.Errorf("map %s: %w", s.Name, err)
		}
		e.live = append(e.live, m)
		e.refs = append(e.refs, m.Ref())
	}
	return e, nil
}

func (e *ptrEnv) close() {
	for _, m := range e.live {
		m.Close()
	}
}

// ptrInput is one run's input: the context and the maps' contents.
type ptrInput struct {
	ctx  []byte
	arr  []byte
	hash map[uint64]uint64
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		switch rng.IntN(4) {
		case 0:
			b[i] = 0
		case 1:
			b[i] = 0xff
		default:
			b[i] = byte(rng.Uint32())
		}
	}
	return b
}

func genPtrInput(rng *rand.Rand) ptrInput {
	in := ptrInput{ctx: randBytes(rng, ptrCtxSize), arr: randBytes(rng, ptrArrBytes), hash: map[uint64]uint64{}}
	// small numbers in places programs use as indices and counters
	for _, off := range []int{0, 4, 16, 32, 68} {
		if rng.IntN(2) == 0 {
			binary.LittleEndian.PutUint32(in.ctx[off:], uint32(rng.IntN(70)))
		}
	}
	if rng.IntN(2) == 0 {
		binary.LittleEndian.PutUint64(in.ctx[8:], uint64(rng.IntN(70)))
	}
	for i := 0; i < 16; i++ {
		if rng.IntN(2) == 0 {
			binary.LittleEndian.PutUint64(in.arr[i*48:], uint64(rng.IntN(64)))
		}
	}
	for k := uint64(0); k < 8; k++ {
		if rng.IntN(3) > 0 {
			in.hash[k] = uint64(rng.IntN(100)) | uint64(rng.IntN(2))<<63
		}
	}
	return in
}

// load sets the maps to in's contents and empties the ring buffer.
func (e *ptrEnv) load(in *ptrInput) error {
	arr, hash, rb := e.live[0], e.live[1], e.live[2]
	var key [8]byte
	for i := 0; i < 16; i++ {
		binary.LittleEndian.PutUint32(key[:4], uint32(i))
		if err := arr.Update(key[:4], in.arr[i*48:(i+1)*48], maps.UpdateAny); err != nil {
			return err
		}
	}
	keys, err := hash.Keys()
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := hash.Delete(k); err != nil {
			return err
		}
	}
	for k := uint64(0); k < 8; k++ {
		if v, ok := in.hash[k]; ok {
			binary.LittleEndian.PutUint64(key[:], k)
			if err := hash.Update(key[:], binary.LittleEndian.AppendUint64(nil, v), maps.UpdateAny); err != nil {
				return err
			}
		}
	}
	_, err = rb.ReadRing(func([]byte) bool { return true })
	return err
}

// ptrOutcome is everything a run leaves observable.
type ptrOutcome struct {
	r0     uint64
	err    error
	ctx    []byte
	arr    []byte
	hash   string
	ring   string
	printk string
}

func (e *ptrEnv) observe(o *ptrOutcome) error {
	arr, hash, rb := e.live[0], e.live[1], e.live[2]
	var key [4]byte
	for i := 0; i < 16; i++ {
		binary.LittleEndian.PutUint32(key[:], uint32(i))
		v, err := arr.Lookup(key[:])
		if err != nil {
			return err
		}
		o.arr = append(o.arr, v...)
	}
	keys, err := hash.Keys()
	if err != nil {
		return err
	}
	slices.SortFunc(keys, bytes.Compare)
	var b strings.Builder
	for _, k := range keys {
		v, err := hash.Lookup(k)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%x=%x ", k, v)
	}
	o.hash = b.String()
	b.Reset()
	if _, err := rb.ReadRing(func(r []byte) bool { fmt.Fprintf(&b, "%x ", r); return true }); err != nil {
		return err
	}
	o.ring = b.String()
	o.printk = strings.Join(maps.DrainPrintk(), "|")
	return nil
}

// diff describes how two outcomes differ ("" if they do not).
func (o *ptrOutcome) diff(p *ptrOutcome) string {
	switch {
	case (o.err == nil) != (p.err == nil):
		return fmt.Sprintf("errors: %v vs %v", o.err, p.err)
	case o.r0 != p.r0:
		return fmt.Sprintf("r0: %#x vs %#x", o.r0, p.r0)
	case !bytes.Equal(o.ctx, p.ctx):
		return fmt.Sprintf("context after the run: %x vs %x", o.ctx, p.ctx)
	case !bytes.Equal(o.arr, p.arr):
		for i := range o.arr {
			if o.arr[i] != p.arr[i] {
				return fmt.Sprintf("map arr value %d byte %d: %#x vs %#x", i/48, i%48, o.arr[i], p.arr[i])
			}
		}
	case o.hash != p.hash:
		return fmt.Sprintf("map hash: %s vs %s", o.hash, p.hash)
	case o.ring != p.ring:
		return fmt.Sprintf("ringbuf records: %s vs %s", o.ring, p.ring)
	case o.printk != p.printk:
		return fmt.Sprintf("printk: %q vs %q", o.printk, p.printk)
	}
	return ""
}

// ptrChecker runs programs on the three engines.
type ptrChecker struct {
	env    [3]*ptrEnv
	jit    bool
	before func() // called before each JIT run
	// noShadow turns the provenance rules off (to test the other checks)
	noShadow bool
}

func newPtrChecker(jit bool) (*ptrChecker, error) {
	c := &ptrChecker{jit: jit}
	return c, c.renew()
}

// renew replaces the maps (after a failure left them in an unknown
// state: a record reserved and never submitted blocks the ring).
func (c *ptrChecker) renew() error {
	c.close()
	for i := range c.env {
		e, err := newPtrEnv()
		if err != nil {
			return err
		}
		c.env[i] = e
	}
	return nil
}

func (c *ptrChecker) close() {
	for i, e := range c.env {
		if e != nil {
			e.close()
			c.env[i] = nil
		}
	}
}

// ptrFailure is a program that the oracle caught.
type ptrFailure struct {
	kind string // trap, shadow, return, address, jit
	msg  string
}

func (f *ptrFailure) Error() string { return f.kind + ": " + f.msg }

// check runs insns (already verified) on runs random inputs drawn from
// rng; it returns the first failure, or nil.
func (c *ptrChecker) check(name string, insns []asm.Instruction, rng *rand.Rand, runs int) (*ptrFailure, error) {
	sh := newShadow(insns, c.env[0].refs, maps.HelperTable())
	layout := ctxLayout(&testHook.Context)
	engA := vm.NewInterpreter(vm.WithMemLayout(layout...), vm.WithBudget(ptrBudget), vm.WithTrace(sh.trace))
	engB := vm.NewInterpreter(vm.WithMemLayout(layout...), vm.WithBudget(ptrBudget))
	xa, err := engA.Compile(&vm.Program{Name: name, Insns: insns, Maps: c.env[0].refs, Helpers: maps.HelperTable()})
	if err != nil {
		return &ptrFailure{"trap", fmt.Sprintf("the interpreter refuses the program: %v", err)}, nil
	}
	defer xa.Close()
	xb, err := engB.Compile(&vm.Program{Name: name, Insns: insns, Maps: c.env[1].refs, Helpers: maps.HelperTable()})
	if err != nil {
		return nil, err
	}
	defer xb.Close()
	var xc vm.Executable
	if c.jit {
		x, err := native.New().Compile(&vm.Program{Name: name, Insns: insns, Maps: c.env[2].refs, Helpers: maps.HelperTable()})
		if err != nil {
			return &ptrFailure{"jit", fmt.Sprintf("the JIT refuses the program: %v", err)}, nil
		}
		defer x.Close()
		xc = x
	}
	buf := make([]byte, ptrCtxSize+ptrCtxSlack)
	run := func(x vm.Executable, e *ptrEnv, in *ptrInput, at int) (*ptrOutcome, error) {
		if err := e.load(in); err != nil {
			return nil, err
		}
		clear(buf)
		mem := buf[at : at+ptrCtxSize]
		copy(mem, in.ctx)
		if x == xa {
			sh.reset(uint64(uintptr(unsafe.Pointer(&mem[0]))), ptrCtxSize)
		}
		o := &ptrOutcome{}
		o.r0, o.err = x.Run(mem)
		o.ctx = bytes.Clone(mem)
		return o, e.observe(o)
	}
	for i := 0; i < runs; i++ {
		in := genPtrInput(rng)
		oa, err := run(xa, c.env[0], &in, 0)
		if err != nil {
			return nil, err
		}
		switch v := testHook.Return.Result(oa.r0); {
		case sh.fail != nil && !c.noShadow:
			return &ptrFailure{"shadow", fmt.Sprintf("%v on ctx %x", sh.fail, in.ctx)}, nil
		case oa.err != nil && errors.Is(oa.err, vm.ErrBudget):
			return &ptrFailure{"trap", fmt.Sprintf("does not end within %d instructions on ctx %x", int(ptrBudget), in.ctx)}, nil
		case oa.err != nil:
			return &ptrFailure{"trap", fmt.Sprintf("%v on ctx %x", oa.err, in.ctx)}, nil
		case v < testHook.Return.Min || v > testHook.Return.Max:
			return &ptrFailure{"return", fmt.Sprintf("r0 = %#x at exit: outside [%d, %d] as the host reads it (the C int in the low 32 bits); ctx %x", oa.r0, testHook.Return.Min, testHook.Return.Max, in.ctx)}, nil
		}
		ob, err := run(xb, c.env[1], &in, 24)
		if err != nil {
			return nil, err
		}
		if d := oa.diff(ob); d != "" {
			return &ptrFailure{"address", fmt.Sprintf("the result depends on where objects are (an address leaks into it): %s; ctx %x", d, in.ctx)}, nil
		}
		if xc == nil {
			continue
		}
		if c.before != nil {
			c.before()
		}
		oc, err := run(xc, c.env[2], &in, 8)
		if err != nil {
			return nil, err
		}
		if d := oa.diff(oc); d != "" {
			return &ptrFailure{"jit", fmt.Sprintf("interpreter and JIT differ: %s; ctx %x", d, in.ctx)}, nil
		}
	}
	return nil, nil
}

// ptrProgram returns program i of seed: each program is reproducible on
// its own.
func ptrProgram(seed uint64, i int) ptrProg {
	return genPtrProgram(rand.New(rand.NewPCG(seed, uint64(i))))
}

func verifyPtr(src string) ([]asm.Instruction, *verifier.Error, error) {
	insns, err := asm.Assemble(src)
	if err != nil {
		return nil, nil, fmt.Errorf("generator produced bad assembly: %w\n%s", err, src)
	}
	cfg := verifier.Config{Hook: testHook, Maps: asmMaps}
	if _, err := cfg.Verify(insns, nil); err != nil {
		var ve *verifier.Error
		if !errors.As(err, &ve) {
			return nil, nil, fmt.Errorf("non-verifier error: %w", err)
		}
		return insns, ve, nil
	}
	return insns, nil, nil
}

// ptrWorker checks programs [from, to) of seed and reports on stdout:
// "PGAT i" before program i runs on the JIT, "PGFAIL i kind msg" for
// each failure, "PGSTAT json" and "PGDONE" at the end.
func ptrWorker(seed uint64, from, to int) error {
	maps.CapturePrintk(true)
	maps.SetPrintkRate(0, 0)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	st := ptrStats{Codes: map[string]int{}, Generated: map[string]int{}, AcceptedTags: map[string]int{}}
	c, err := newPtrChecker(true)
	if err != nil {
		return err
	}
	defer c.close()
	cur := 0
	c.before = func() {
		fmt.Fprintf(out, "PGAT %d\n", cur)
		out.Flush()
	}
	for i := from; i < to; i++ {
		cur = i
		p := ptrProgram(seed, i)
		st.Programs++
		for t := range p.tags {
			st.Generated[t]++
		}
		insns, ve, err := verifyPtr(p.src)
		if err != nil {
			return err
		}
		if ve != nil {
			st.Codes[ve.Code.String()]++
			continue
		}
		st.Accepted++
		for t := range p.tags {
			st.AcceptedTags[t]++
		}
		f, err := c.check(fmt.Sprint("ptrgen", i), insns, rand.New(rand.NewPCG(seed^0x5eed, uint64(i))), ptrRuns)
		if err != nil {
			return err
		}
		st.Runs += ptrRuns
		if f != nil {
			st.Failures++
			fmt.Fprintf(out, "PGFAIL %d %s %s\n", i, f.kind, strconv.Quote(f.msg))
			if err := c.renew(); err != nil {
				return err
			}
		}
	}
	b, _ := json.Marshal(st)
	fmt.Fprintf(out, "PGSTAT %s\nPGDONE\n", b)
	return nil
}

// ptrFail is one failure reported by a worker.
type ptrFail struct {
	index int
	kind  string
	msg   string
}

// runPtrWorkers runs workers as child processes until [0, n) is done,
// NCCLBPF_PTRGEN_PAR of them at a time (default 1), restarting after a
// crash. It returns the merged statistics and the failures, crashes
// included (kind "crash"), in program order.
func runPtrWorkers(t *testing.T, seed uint64, n int, env ...string) (ptrStats, []ptrFail) {
	total := ptrStats{Codes: map[string]int{}, Generated: map[string]int{}, AcceptedTags: map[string]int{}}
	var fails []ptrFail
	par := 1
	if v, err := strconv.Atoi(os.Getenv("NCCLBPF_PTRGEN_PAR")); err == nil && v > 0 {
		par = v
	}
	const chunk = 20000
	type result struct {
		st    ptrStats
		fails []ptrFail
		err   error
	}
	results := make(chan result)
	sem := make(chan struct{}, par)
	chunks := 0
	for from := 0; from < n; from += chunk {
		chunks++
		go func(from, to int) {
			sem <- struct{}{}
			defer func() { <-sem }()
			st, f, err := runPtrChunk(seed, from, to, env)
			results <- result{st, f, err}
		}(from, min(from+chunk, n))
	}
	start := time.Now()
	var firstErr error
	for i := 0; i < chunks; i++ {
		r := <-results
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		total.add(&r.st)
		fails = append(fails, r.fails...)
		if chunks > 1 {
			t.Logf("ptrgen: %d/%d chunks, %d programs, %d accepted, %d failures, %v", i+1, chunks, total.Programs, total.Accepted, len(fails), time.Since(start).Round(time.Second))
		}
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	sort.Slice(fails, func(i, j int) bool { return fails[i].index < fails[j].index })
	return total, fails
}

// runPtrChunk runs workers on [from, to), a new one after each crash.
func runPtrChunk(seed uint64, from, to int, env []string) (ptrStats, []ptrFail, error) {
	total := ptrStats{Codes: map[string]int{}, Generated: map[string]int{}, AcceptedTags: map[string]int{}}
	var fails []ptrFail
	for from < to {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPtrSoundness$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("NCCLBPF_PTRGEN_WORKER=%d:%d:%d", seed, from, to))
		cmd.Env = append(cmd.Env, env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return total, fails, err
		}
		if err := cmd.Start(); err != nil {
			return total, fails, err
		}
		last, done := -1, false
		var other strings.Builder
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "PGAT "):
				last, _ = strconv.Atoi(line[5:])
			case strings.HasPrefix(line, "PGFAIL "):
				f := strings.SplitN(line, " ", 4)
				i, _ := strconv.Atoi(f[1])
				msg, _ := strconv.Unquote(f[3])
				fails = append(fails, ptrFail{i, f[2], msg})
			case strings.HasPrefix(line, "PGSTAT "):
				var st ptrStats
				if err := json.Unmarshal([]byte(line[7:]), &st); err != nil {
					return total, fails, fmt.Errorf("ptrgen worker [%d, %d): statistics: %w", from, to, err)
				}
				total.add(&st)
			case line == "PGDONE":
				done = true
			default:
				other.WriteString(line + "\n")
			}
		}
		werr := cmd.Wait()
		if done && werr == nil {
			return total, fails, nil
		}
		if last < from {
			return total, fails, fmt.Errorf("ptrgen worker [%d, %d) failed before running any program on the JIT: %v\n%s%s", from, to, werr, tail(other.String(), 3000), tail(stderr.String(), 3000))
		}
		fails = append(fails, ptrFail{last, "crash", fmt.Sprintf("the process died running it on the JIT (%v): %s%s", werr, tail(other.String(), 1500), tail(stderr.String(), 1500))})
		// the statistics of [from, last] are lost; the rest is rerun
		from = last + 1
	}
	return total, fails, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func (s *ptrStats) add(o *ptrStats) {
	s.Programs += o.Programs
	s.Accepted += o.Accepted
	s.Runs += o.Runs
	s.Failures += o.Failures
	for k, v := range o.Codes {
		s.Codes[k] += v
	}
	for k, v := range o.Generated {
		s.Generated[k] += v
	}
	for k, v := range o.AcceptedTags {
		s.AcceptedTags[k] += v
	}
}

// TestPtrSoundness: accepted pointer-heavy programs never trap, never
// depend on addresses, return values in range and run alike on the
// interpreter and the JIT.
func TestPtrSoundness(t *testing.T) {
	if os.Getenv("NCCLBPF_PTRGEN_CRASHTEST") != "" {
		ptrCrashWorker(t)
		return
	}
	if w := os.Getenv("NCCLBPF_PTRGEN_WORKER"); w != "" {
		var seed uint64
		var from, to int
		if _, err := fmt.Sscanf(w, "%d:%d:%d", &seed, &from, &to); err != nil {
			t.Fatalf("NCCLBPF_PTRGEN_WORKER=%q: want seed:from:to: %v", w, err)
		}
		if err := ptrWorker(seed, from, to); err != nil {
			t.Fatal(err)
		}
		return
	}
	n := ptrGenDefault
	if testing.Short() {
		n = ptrGenShort
	}
	if v, err := strconv.Atoi(os.Getenv("NCCLBPF_PTRGEN_N")); err == nil && v > 0 {
		n = v
	}
	seed := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("NCCLBPF_PTRGEN_SEED"), 10, 64); err == nil {
		seed = v
	}
	start := time.Now()
	st, fails := runPtrWorkers(t, seed, n)
	t.Logf("ptrgen seed %d: %d programs, %d accepted, %d runs x 3 engines, %d failures, %v", seed, st.Programs, st.Accepted, st.Runs, len(fails), time.Since(start).Round(time.Millisecond))
	t.Logf("rejected by code: %v", st.Codes)
	var b strings.Builder
	for _, tag := range sortedKeys(st.Generated) {
		fmt.Fprintf(&b, " %s=%d/%d", tag, st.AcceptedTags[tag], st.Generated[tag])
	}
	t.Logf("accepted/generated per construction:%s", b.String())
	// the generator must build every construction, and enough of its
	// programs must pass the verifier for the oracle to see them
	for _, tag := range allPtrTags {
		if st.Generated[tag] == 0 && len(fails) == 0 {
			t.Errorf("the generator never built %s", tag)
		}
	}
	if st.Accepted < st.Programs/20 {
		t.Errorf("only %d of %d programs were accepted: the generator is too far off", st.Accepted, st.Programs)
	}
	// report at most 3 failures of each kind of violation (minimized),
	// count the rest
	findings := os.Getenv("NCCLBPF_PTRGEN_FINDINGS")
	maps.CapturePrintk(true)
	defer maps.CapturePrintk(false)
	perClass := map[string]int{}
	tried := map[string]int{}
	shapes := map[string]bool{}
	for _, f := range fails {
		class := f.kind + ": " + violation(f.msg)
		perClass[class]++
		// minimize up to 10 of each kind of violation and report those
		// whose minimized programs differ in shape
		if tried[class] >= 10 {
			continue
		}
		tried[class]++
		src, what := ptrProgram(seed, f.index).src, "as generated"
		if f.kind != "jit" && f.kind != "crash" {
			src, f.msg = minimizePtr(src, f, seed)
			what = "minimized: still accepted, still failing"
		}
		if sh := shape(src); shapes[sh] {
			continue
		} else {
			shapes[sh] = true
		}
		t.Errorf("accepted program %d (seed %d) fails the oracle: %s: %s\n(%s)\n%s", f.index, seed, f.kind, f.msg, what, numbered(src))
		if findings != "" {
			appendFinding(t, findings, fmt.Sprintf("seed%d_prog%d", seed, f.index), f, src)
		}
	}
	for _, class := range sortedKeys(perClass) {
		t.Logf("%6d failures: %s", perClass[class], class)
	}
	maps.DrainPrintk()
}

// violation shortens a failure message to what kind of violation it is:
// without the pc, the context, the numbers.
func violation(msg string) string {
	for _, k := range []string{"outside the object the pointer came from", "through a number", "which was released",
		"read-only", "not initialized", "never written", "part of a spilled pointer", "leaves the program",
		"is a pointer", "returns a pointer", "still reserved", "not the start of a live ringbuf record",
		"does not end", "outside any known region", "depends on where objects are", "as the host reads it",
		"interpreter and JIT differ", "died", "misaligned atomic", "write to read-only memory", "call depth",
		"instruction budget", "unknown helper"} {
		if strings.Contains(msg, k) {
			if k == "not initialized" || k == "is a pointer" {
				// say which register or argument
				if i := strings.Index(msg, "): "); i > 0 {
					msg = msg[i+3:]
				}
				if i := strings.Index(msg, " on ctx"); i > 0 {
					msg = msg[:i]
				}
				if i := strings.Index(msg, " (to "); i > 0 {
					msg = msg[:i]
				}
				return msg
			}
			return k
		}
	}
	if i := strings.Index(msg, " on ctx "); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// minimizePtr removes instructions from src while the verifier still
// accepts it and the interpreter-side oracle still reports the same
// violation as f; it returns the program and the violation's message.
func minimizePtr(src string, f ptrFail, seed uint64) (string, string) {
	c, err := newPtrChecker(false)
	if err != nil {
		return src, f.msg
	}
	defer c.close()
	want := f.kind + ": " + violation(f.msg)
	msg := f.msg
	fails := func(s string) bool {
		insns, ve, err := verifyPtr(s)
		if err != nil || ve != nil {
			return false
		}
		g, err := c.check("min", insns, rand.New(rand.NewPCG(seed^0x5eed, uint64(f.index))), 4*ptrRuns)
		if err != nil || g == nil {
			return false
		}
		_ = c.renew()
		if g.kind+": "+violation(g.msg) != want {
			return false
		}
		msg = g.msg
		return true
	}
	if !fails(src) {
		return src, f.msg
	}
	lines := strings.Split(strings.TrimSpace(src), "\n")
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(lines); i++ {
			try := slices.Delete(slices.Clone(lines), i, i+1)
			if fails(strings.Join(try, "\n") + "\n") {
				lines, changed = try, true
				i--
			}
		}
	}
	fails(strings.Join(lines, "\n") + "\n") // msg of the final program
	return strings.Join(lines, "\n") + "\n", msg
}

func appendFinding(t *testing.T, path, name string, f ptrFail, src string) {
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Logf("findings: %v", err)
		return
	}
	defer fh.Close()
	msg := f.msg
	if i := strings.Index(msg, " on ctx "); i > 0 {
		msg = msg[:i]
	}
	fmt.Fprintf(fh, "\n-- bad_%s\n# %s: %s\n%s", name, f.kind, msg, src)
}

// ptrCrashWorker runs a program that stores to address 8 on the JIT, after
// announcing it like a worker does: the parent must see the crash.
func ptrCrashWorker(t *testing.T) {
	insns, err := asm.Assemble("mov %r1, 0\nstdw [%r1+8], 1\nmov %r0, 0\nexit\n")
	if err != nil {
		t.Fatal(err)
	}
	x, err := native.New().Compile(&vm.Program{Name: "crash", Insns: insns, Helpers: maps.HelperTable()})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("PGAT 7")
	os.Stdout.Sync()
	x.Run(make([]byte, 8))
	fmt.Println("PGDONE")
}

// shape is a program's sequence of mnemonics: minimized programs of the
// same shape show the same hole.
func shape(src string) string {
	var b strings.Builder
	for _, l := range strings.Split(src, "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasSuffix(f[0], ":") && f[0] != "stdw" {
			b.WriteString(f[0] + " ")
		}
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

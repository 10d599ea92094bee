package ncclabi

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ncclbpf/ncclbpf/hook"
)

// The sizes of NCCL's tuning tables: functions (Broadcast, Reduce,
// AllGather, ReduceScatter, AllReduce), algorithms and protocols, in
// NCCL's order (hook.NCCLCollNames, NCCLAlgoNames, NCCLProtoNames).
const (
	NumFuncs  = 5
	NumAlgos  = 7
	NumProtos = 3
)

// Tuning is what NCCL's log says of one communicator's cost model: the
// tables ncclTopoTuneModel fills at init (rank 0 prints them with
// NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING) and the facts of the INIT log
// that the per-call model reads.
type Tuning struct {
	// Lat and BW are comm->latencies (µs) and comm->bandwidths (GB/s),
	// by function, algorithm and protocol, as printed (%8.1f/%6.1f).
	Lat, BW [NumFuncs][NumAlgos][NumProtos]float64
	// MaxThreads is the "Max NThreads" line, by algorithm and protocol.
	MaxThreads [NumAlgos][NumProtos]int
	Comm       Comm
	// Source and Line say where the first table line was read.
	Source string
	Line   int
}

// Comm holds the communicator facts the per-call model reads besides the
// tables. The log gives all of them but MinCompCap and CPUArch, which
// NCCL prints only at TRACE level.
type Comm struct {
	Version    [3]int // NCCL's version ("NCCL version 2.28.9+cuda12.9"); zero if not printed
	NRanks     int    // "comm 0x... rank 0 nRanks 2 nNodes 2 localRanks 1 ..."; 0 if not printed
	NNodes     int
	LocalRanks int // of rank 0, which prints the tables
	NChannels  int // "32 coll channels, ..."; 0 if not printed
	MinCompCap int // lowest compute capability of the ranks (90 = sm_90); 0 if not known
	CPUArch    string
}

//go:embed testdata/default/tuning.log
var defaultTuningLog string

// DefaultTuningSource names the tables DefaultTuning returns.
const DefaultTuningSource = "internal/ncclabi/testdata/default/tuning.log"

// DefaultTuning returns the tables `ncclbpf run` uses when given no NCCL
// log: one communicator of 8 ranks on one node (testdata/default).
func DefaultTuning() *Tuning {
	ts, err := ParseTuningLog(strings.NewReader(defaultTuningLog), DefaultTuningSource)
	if err != nil {
		panic("BUG: the embedded tuning log: " + err.Error())
	}
	return ts[0]
}

// ParseTuningLogFile reads NCCL's log from a file (see ParseTuningLog).
func ParseTuningLogFile(path string) ([]*Tuning, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTuningLog(f, path)
}

// ParseTuningLog reads an NCCL log (NCCL_DEBUG=INFO with the TUNING and
// INIT subsystems; lines may keep NCCL's "host:pid:tid [dev] NCCL INFO"
// prefix or be bare) and returns one Tuning per communicator whose tables
// it prints, in the order of the log. Lines of several processes may be
// interleaved: the tables and facts are tied to their process by the pid of
// the prefix. A table line that does not parse is an error naming
// source:line; other lines are ignored.
func ParseTuningLog(r io.Reader, source string) ([]*Tuning, error) {
	p := &logParser{source: source, procs: map[string]*procState{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, p.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", source, p.line+1, err)
	}
	var out []*Tuning
	for _, t := range p.done {
		if err := p.checkComplete(t); err != nil {
			return nil, err
		}
		out = append(out, t.tuning)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tuning table (NCCL prints it at rank 0 with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING; look for lines \"  Algorithm   |\")", source)
	}
	return out, nil
}

type logParser struct {
	source  string
	line    int
	procs   map[string]*procState
	done    []*tableState
	version [3]int
}

// procState is what one process's lines have said so far.
type procState struct {
	comm    Comm        // the facts of its latest communicator
	table   *tableState // its tables being read
	blockAl []int       // algorithms of the current block
	blockPr []int       // protocols of the current block (by algorithm slot)
}

type tableState struct {
	tuning *Tuning
	seen   [NumFuncs][NumAlgos]bool
	thr    [NumAlgos]bool
}

// splitPrefix returns the process key (the pid of "host:pid:tid", or ""
// for a bare line) and the message.
func splitPrefix(line string) (string, string) {
	i := strings.Index(line, " NCCL INFO ")
	if i < 0 {
		return "", line
	}
	msg := line[i+len(" NCCL INFO "):]
	for _, tok := range strings.Fields(line[:i]) {
		parts := strings.Split(tok, ":")
		if len(parts) >= 3 && isDigits(parts[len(parts)-2]) && isDigits(parts[len(parts)-1]) {
			return parts[len(parts)-2], msg
		}
	}
	return "", msg
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (p *logParser) proc(key string) *procState {
	ps := p.procs[key]
	if ps == nil {
		ps = &procState{}
		ps.comm.Version = p.version
		p.procs[key] = ps
	}
	return ps
}

func (p *logParser) parseLine(line string) error {
	key, msg := splitPrefix(line)
	switch {
	case strings.HasPrefix(msg, "NCCL version "):
		v, ok := parseVersion(strings.TrimPrefix(msg, "NCCL version "))
		if !ok {
			return fmt.Errorf("%q: want NCCL version MAJOR.MINOR.PATCH", msg)
		}
		p.version = v
		p.proc(key).comm.Version = v
		return nil
	case strings.HasPrefix(msg, "  Algorithm   |"):
		return p.algorithmLine(p.proc(key), msg)
	case strings.HasPrefix(msg, "  Protocol    |"):
		return p.protocolLine(p.proc(key), msg)
	case strings.HasPrefix(msg, " Max NThreads |"):
		return p.threadsLine(p.proc(key), msg)
	case strings.Contains(msg, " coll channels, "):
		var n int
		if _, err := fmt.Sscanf(msg, "%d coll channels", &n); err != nil || n < 1 {
			return fmt.Errorf("%q: want N coll channels with N >= 1", msg)
		}
		ps := p.proc(key)
		ps.comm.NChannels = n
		if t := ps.table; t != nil && t.tuning.Comm.NChannels == 0 { // it follows the tables
			t.tuning.Comm.NChannels = n
		}
		return nil
	case strings.HasPrefix(msg, "comm ") && strings.Contains(msg, " nRanks ") && strings.Contains(msg, " nNodes "):
		return p.commLine(p.proc(key), msg)
	}
	if name, _, ok := strings.Cut(msg, "|"); ok {
		// NCCL_ALGO/NCCL_PROTO's "Enabled ... Matrix" has lines of the same
		// names, with no LAT/BW cells.
		if f := indexOf(hook.NCCLCollNames, strings.TrimSpace(name)); f >= 0 && strings.Contains(msg, "/") {
			return p.funcLine(p.proc(key), f, msg)
		}
	}
	return nil
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	s, _, _ = strings.Cut(s, "+")
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ".")
	if len(parts) < 3 {
		return v, false
	}
	for i := 0; i < 3; i++ {
		digits := parts[i]
		if i == 2 { // "9" of "2.28.9", maybe followed by a suffix ("9a0")
			j := 0
			for j < len(digits) && digits[j] >= '0' && digits[j] <= '9' {
				j++
			}
			digits = digits[:j]
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// commLine reads "comm %p rank %d nRanks %d nNodes %d localRanks %d
// localRank %d MNNVL %d": a new communicator of this process.
func (p *logParser) commLine(ps *procState, msg string) error {
	f := strings.Fields(msg)
	get := func(name string) (int, error) {
		for i := 0; i+1 < len(f); i++ {
			if f[i] == name {
				n, err := strconv.Atoi(f[i+1])
				if err != nil {
					return 0, fmt.Errorf("%q: %s %q is not a number", msg, name, f[i+1])
				}
				return n, nil
			}
		}
		return 0, fmt.Errorf("%q: no %s", msg, name)
	}
	var c Comm
	c.Version = p.version
	var err error
	if c.NRanks, err = get("nRanks"); err != nil {
		return err
	}
	if c.NNodes, err = get("nNodes"); err != nil {
		return err
	}
	if c.LocalRanks, err = get("localRanks"); err != nil {
		return err
	}
	if c.NRanks < 1 || c.NNodes < 1 || c.NNodes > c.NRanks {
		return fmt.Errorf("%q: want 1 <= nNodes <= nRanks", msg)
	}
	ps.comm = c
	ps.table, ps.blockAl, ps.blockPr = nil, nil, nil
	return nil
}

func indexOf(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}

// cells splits "head | a | b | ... |" into the trimmed fields after head.
func cells(msg string) []string {
	parts := strings.Split(msg, "|")
	out := parts[1:]
	if n := len(out); n > 0 && strings.TrimSpace(out[n-1]) == "" {
		out = out[:n-1]
	}
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// algorithmLine starts a block of up to three algorithms; the block of
// Tree (the first) starts a new table.
func (p *logParser) algorithmLine(ps *procState, msg string) error {
	names := cells(msg)
	if len(names) == 0 || len(names) > 3 {
		return fmt.Errorf("Algorithm line with %d algorithms; want 1 to 3", len(names))
	}
	ps.blockAl, ps.blockPr = nil, nil
	for _, n := range names {
		a := indexOf(hook.NCCLAlgoNames, n)
		if a < 0 {
			return fmt.Errorf("Algorithm line: unknown algorithm %q (want one of %s)", n, strings.Join(hook.NCCLAlgoNames, ", "))
		}
		ps.blockAl = append(ps.blockAl, a)
	}
	if ps.blockAl[0] == 0 || ps.table == nil {
		if ps.table != nil {
			if err := p.checkComplete(ps.table); err != nil {
				return err
			}
		}
		t := &tableState{tuning: &Tuning{Comm: ps.comm, Source: p.source, Line: p.line}}
		ps.table = t
		p.done = append(p.done, t)
	}
	return nil
}

// protocolLine names the protocols of each slot (NCCL prints three slots
// even for a block of fewer algorithms).
func (p *logParser) protocolLine(ps *procState, msg string) error {
	if ps.blockAl == nil {
		return fmt.Errorf("Protocol line before an Algorithm line")
	}
	names := cells(msg)
	if len(names) < len(ps.blockAl)*NumProtos {
		return fmt.Errorf("Protocol line with %d protocols; want %d for %d algorithms", len(names), len(ps.blockAl)*NumProtos, len(ps.blockAl))
	}
	ps.blockPr = nil
	for _, n := range names[:len(ps.blockAl)*NumProtos] {
		pr := indexOf(hook.NCCLProtoNames, n)
		if pr < 0 {
			return fmt.Errorf("Protocol line: unknown protocol %q (want one of %s)", n, strings.Join(hook.NCCLProtoNames, ", "))
		}
		ps.blockPr = append(ps.blockPr, pr)
	}
	return nil
}

func (p *logParser) threadsLine(ps *procState, msg string) error {
	if ps.blockPr == nil {
		return fmt.Errorf("Max NThreads line before Algorithm and Protocol lines")
	}
	vals := cells(msg)
	if len(vals) != len(ps.blockPr) {
		return fmt.Errorf("Max NThreads line with %d values; want %d", len(vals), len(ps.blockPr))
	}
	for i, v := range vals {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("Max NThreads value %d %q is not an integer", i+1, v)
		}
		a := ps.blockAl[i/NumProtos]
		ps.table.tuning.MaxThreads[a][ps.blockPr[i]] = n
		ps.table.thr[a] = true
	}
	return nil
}

// funcLine reads "    AllReduce |   lat/    bw |   lat/    bw | ...".
func (p *logParser) funcLine(ps *procState, f int, msg string) error {
	if ps.blockPr == nil || ps.table == nil {
		return fmt.Errorf("%s line before the Algorithm and Protocol lines of its block", hook.NCCLCollNames[f])
	}
	vals := cells(msg)
	if len(vals) != len(ps.blockPr) {
		return fmt.Errorf("%s line with %d cells; want %d (one LAT/BW per algorithm and protocol of the block)",
			hook.NCCLCollNames[f], len(vals), len(ps.blockPr))
	}
	t := ps.table
	for i, v := range vals {
		ls, bs, ok := strings.Cut(v, "/")
		lat, err1 := strconv.ParseFloat(strings.TrimSpace(ls), 64)
		bw, err2 := strconv.ParseFloat(strings.TrimSpace(bs), 64)
		a, pr := ps.blockAl[i/NumProtos], ps.blockPr[i]
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%s %s/%s: %q is not LAT/BW (two numbers)", hook.NCCLCollNames[f],
				hook.NCCLAlgoNames[a], hook.NCCLProtoNames[pr], v)
		}
		if lat < 0 || bw < 0 {
			return fmt.Errorf("%s %s/%s: %q: negative latency or bandwidth", hook.NCCLCollNames[f],
				hook.NCCLAlgoNames[a], hook.NCCLProtoNames[pr], v)
		}
		t.tuning.Lat[f][a][pr] = lat
		t.tuning.BW[f][a][pr] = bw
		t.seen[f][a] = true
	}
	return nil
}

// checkComplete fails unless every function and algorithm was read.
func (p *logParser) checkComplete(t *tableState) error {
	for f := 0; f < NumFuncs; f++ {
		for a := 0; a < NumAlgos; a++ {
			if !t.seen[f][a] {
				return fmt.Errorf("%s:%d: the tuning table that starts here has no %s line for %s", p.source,
					t.tuning.Line, hook.NCCLCollNames[f], hook.NCCLAlgoNames[a])
			}
		}
	}
	return nil
}

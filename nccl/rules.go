package nccl

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Numbering shared with NCCL and include/ncclbpf.h.
var (
	collNames  = []string{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}
	algoNames  = []string{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
	protoNames = []string{"ll", "ll128", "simple"}
)

// NumColls is the number of collectives that reach the tuner.
const NumColls = 5

// Rule is one line of a rules file, in the format of NCCL's example CSV
// tuner:
//
//	collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
//
// A rule matches a call whose collective is Coll, whose size lies in
// [MinBytes, MaxBytes] and whose nodes, ranks, pipelined ops and regBuff
// equal the rule's (-1: any). The first matching rule whose
// (algorithm, protocol) NCCL marked available wins, as in the example
// tuner. Unlike the example, -1 really keeps NCCL's default: channels -1
// leaves NCCL's channel count, and algorithm or protocol "-1" (or
// "default") leaves that choice to NCCL.
type Rule struct {
	Coll               int
	MinBytes, MaxBytes uint64
	Algorithm          int // -1: NCCL's choice
	Protocol           int // -1: NCCL's choice
	Channels           int // -1: NCCL's choice
	Nodes, Ranks       int // -1: any
	PipeOps, RegBuff   int // -1: any
	Line               int // line in the file, for messages
}

// ParseRulesFile reads a rules file.
func ParseRulesFile(path string) ([]Rule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	defer f.Close()
	rules, err := ParseRules(f)
	if err != nil {
		return nil, fmt.Errorf("rules file %s: %w", path, err)
	}
	return rules, nil
}

// ParseRules parses rules in the example CSV tuner's format: one rule per
// line, blank lines and lines starting with '#' skipped, fields separated
// by commas and trimmed. Unlike the example tuner, which maps unknown names
// to defaults and ignores short lines silently, every malformed line is an
// error naming the line.
func ParseRules(r io.Reader) ([]Rule, error) {
	var out []Rule
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if len(f) < 8 || len(f) > 10 {
			return nil, fmt.Errorf("line %d: %d fields, want 8 to 10 "+
				"(collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]])", n, len(f))
		}
		ru := Rule{Line: n, PipeOps: -1, RegBuff: -1}
		var err error
		if ru.Coll, err = lookupName("collective", f[0], collNames, false); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if ru.MinBytes, err = strconv.ParseUint(f[1], 10, 64); err != nil {
			return nil, fmt.Errorf("line %d: min_bytes %q: %w", n, f[1], err)
		}
		if ru.MaxBytes, err = strconv.ParseUint(f[2], 10, 64); err != nil {
			return nil, fmt.Errorf("line %d: max_bytes %q: %w", n, f[2], err)
		}
		if ru.MinBytes > ru.MaxBytes {
			return nil, fmt.Errorf("line %d: min_bytes %d > max_bytes %d", n, ru.MinBytes, ru.MaxBytes)
		}
		if ru.Algorithm, err = lookupName("algorithm", f[3], algoNames, true); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if ru.Protocol, err = lookupName("protocol", f[4], protoNames, true); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		ints := []struct {
			name string
			dst  *int
			min  int
			max  int
		}{
			{"channels", &ru.Channels, 1, 64},
			{"nNodes", &ru.Nodes, 1, math.MaxInt32},
			{"nRanks", &ru.Ranks, 1, math.MaxInt32},
			{"numPipeOps", &ru.PipeOps, 1, math.MaxInt32},
			{"regBuff", &ru.RegBuff, 0, 1},
		}
		for i, in := range ints {
			if 5+i >= len(f) {
				break
			}
			v, err := strconv.Atoi(f[5+i])
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %q: %w", n, in.name, f[5+i], err)
			}
			if v != -1 && (v < in.min || v > in.max) {
				return nil, fmt.Errorf("line %d: %s %d: want -1 or %d..%d", n, in.name, v, in.min, in.max)
			}
			*in.dst = v
		}
		out = append(out, ru)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func lookupName(what, s string, names []string, allowDefault bool) (int, error) {
	low := strings.ToLower(s)
	if allowDefault && (low == "-1" || low == "default") {
		return -1, nil
	}
	for i, n := range names {
		if low == n {
			return i, nil
		}
	}
	extra := ""
	if allowDefault {
		extra = ", or -1/default"
	}
	return 0, fmt.Errorf("%s %q: want one of %s%s", what, s, strings.Join(names, ", "), extra)
}

// Layout of the rule table the rules policy reads (the global variable
// `ncclbpf_rules` in policies/rules.bpf.c; keep the two in step):
//
//	struct rule  { __s32 n_nodes, n_ranks, num_pipe_ops, reg_buff, algorithm, protocol, n_channels; __u32 line; };
//	struct ivl   { __u32 n; __u32 pad; struct rule r[RulesMaxCand]; };
//	struct table { __u64 lo[NumColls][RulesMaxIvl]; struct ivl ivl[NumColls][RulesMaxIvl]; };
//
// For each collective the size axis is cut into intervals at every rule
// boundary; lo[c][i] is the first size of interval i (lo[c][0] = 0, unused
// entries = 2^64-1, so a fixed-step binary search needs no count) and
// ivl[c][i] lists, in file order, the rules whose size range covers it. A
// lookup is log2(RulesMaxIvl) comparisons and a scan of at most
// RulesMaxCand rules, however many rules the file has.
const (
	RulesVar       = "ncclbpf_rules"
	RulesMaxIvl    = 512
	RulesMaxCand   = 8
	RuleSize       = 32
	RulesIvlSize   = 8 + RulesMaxCand*RuleSize
	RulesTableSize = NumColls*RulesMaxIvl*8 + NumColls*RulesMaxIvl*RulesIvlSize
)

// RulesMaxBytes caps sizes in the rules policy: larger call sizes and rule
// bounds count as RulesMaxBytes, so that the table's unused entries
// (2^64-1) are never at or below a size.
const RulesMaxBytes = math.MaxInt64

func capBytes(n uint64) uint64 { return min(n, RulesMaxBytes) }

// RulesTable builds the bytes of the rule table for rules.
func RulesTable(rules []Rule) ([]byte, error) {
	b := make([]byte, RulesTableSize)
	le := binary.LittleEndian
	for c := 0; c < NumColls; c++ {
		var mine []Rule
		for _, r := range rules {
			if r.Coll == c {
				r.MinBytes, r.MaxBytes = capBytes(r.MinBytes), capBytes(r.MaxBytes)
				mine = append(mine, r)
			}
		}
		cuts := map[uint64]bool{0: true}
		for _, r := range mine {
			cuts[r.MinBytes] = true
			if r.MaxBytes != RulesMaxBytes {
				cuts[r.MaxBytes+1] = true
			}
		}
		starts := make([]uint64, 0, len(cuts))
		for v := range cuts {
			starts = append(starts, v)
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
		// Candidates per elementary interval; merge neighbours with equal lists.
		var los []uint64
		var cands [][]Rule
		for _, lo := range starts {
			var cs []Rule
			for _, r := range mine {
				if r.MinBytes <= lo && lo <= r.MaxBytes {
					cs = append(cs, r)
				}
			}
			if n := len(cands); n > 0 && sameRules(cands[n-1], cs) {
				continue
			}
			los = append(los, lo)
			cands = append(cands, cs)
		}
		if len(los) > RulesMaxIvl {
			return nil, fmt.Errorf("collective %s: the rules cut the size axis into %d ranges; at most %d are supported",
				collNames[c], len(los), RulesMaxIvl)
		}
		loBase := c * RulesMaxIvl * 8
		ivlBase := NumColls*RulesMaxIvl*8 + c*RulesMaxIvl*RulesIvlSize
		for i := 0; i < RulesMaxIvl; i++ {
			lo := uint64(math.MaxUint64)
			if i < len(los) {
				lo = los[i]
			}
			le.PutUint64(b[loBase+8*i:], lo)
		}
		for i, cs := range cands {
			if len(cs) > RulesMaxCand {
				hi := uint64(RulesMaxBytes)
				if i+1 < len(los) {
					hi = los[i+1] - 1
				}
				lines := make([]string, len(cs))
				for k, r := range cs {
					lines[k] = strconv.Itoa(r.Line)
				}
				return nil, fmt.Errorf("collective %s, sizes %d..%d: %d rules overlap (lines %s); at most %d may",
					collNames[c], los[i], hi, len(cs), strings.Join(lines, ","), RulesMaxCand)
			}
			o := ivlBase + i*RulesIvlSize
			le.PutUint32(b[o:], uint32(len(cs)))
			for k, r := range cs {
				p := o + 8 + k*RuleSize
				for j, v := range []int{r.Nodes, r.Ranks, r.PipeOps, r.RegBuff, r.Algorithm, r.Protocol, r.Channels, r.Line} {
					if j == 6 && v == -1 {
						v = 0 // channels: 0 is the context's "leave it to NCCL"
					}
					le.PutUint32(b[p+4*j:], uint32(int32(v)))
				}
			}
		}
	}
	return b, nil
}

func sameRules(a, b []Rule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Decide is the reference semantics of the rules policy, for tests: the
// (algorithm, protocol, channels) the first applicable rule gives for a
// call, with -1/-1/0 when none applies. Sizes are capped at RulesMaxBytes. avail reports whether NCCL marked
// cell (a, p) available.
func Decide(rules []Rule, coll int, nBytes uint64, nodes, ranks, pipeOps, regBuff int, avail func(a, p int) bool) (algo, proto, channels int) {
	nBytes = capBytes(nBytes)
	for _, r := range rules {
		if r.Coll != coll || nBytes < capBytes(r.MinBytes) || nBytes > capBytes(r.MaxBytes) {
			continue
		}
		if (r.Nodes != -1 && r.Nodes != nodes) || (r.Ranks != -1 && r.Ranks != ranks) ||
			(r.PipeOps != -1 && r.PipeOps != pipeOps) || (r.RegBuff != -1 && r.RegBuff != regBuff) {
			continue
		}
		if !ruleAvailable(r, avail) {
			continue
		}
		ch := r.Channels
		if ch == -1 {
			ch = 0
		}
		return r.Algorithm, r.Protocol, ch
	}
	return -1, -1, 0
}

func ruleAvailable(r Rule, avail func(a, p int) bool) bool {
	switch {
	case r.Algorithm >= 0 && r.Protocol >= 0:
		return avail(r.Algorithm, r.Protocol)
	case r.Algorithm >= 0:
		return avail(r.Algorithm, 0) || avail(r.Algorithm, 1) || avail(r.Algorithm, 2)
	case r.Protocol >= 0:
		for a := 0; a < len(algoNames); a++ {
			if avail(a, r.Protocol) {
				return true
			}
		}
		return false
	}
	return true
}

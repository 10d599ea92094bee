// Package tuner is the CSV rules format of NCCL's example tuner and the
// lookup tables the "rules" policy reads (what NCCL does with a decision
// is in internal/ncclabi).
package tuner

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"github.com/ncclbpf/ncclbpf/hook"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
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

// ParseRules parses rules in the example CSV tuner's format: one rule per
// line, fields separated by commas and trimmed. As in NCCL's parser, blank
// lines and lines starting with '#' are skipped, a '#' after the fields
// starts a comment (NCCL reads a number up to it), and a header row of
// column names as the first line (collective_type,min_bytes,...; NCCL
// turns it into a rule no call of a non-zero size matches) is skipped.
// Unlike NCCL's parser, which maps unknown names to defaults and ignores
// short lines silently, every other malformed line is an error naming the
// line.
func ParseRules(r io.Reader) ([]Rule, error) {
	var out []Rule
	sc := bufio.NewScanner(r)
	first := true
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if first {
			first = false
			if isHeader(f) {
				continue
			}
		}
		if len(f) < 8 || len(f) > 10 {
			return nil, fmt.Errorf("line %d: %d fields, want 8 to 10 "+
				"(collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]])", n, len(f))
		}
		ru := Rule{Line: n, PipeOps: -1, RegBuff: -1}
		var err error
		if ru.Coll, err = lookupName("collective", f[0], hook.CollNames, false); err != nil {
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
		if ru.Algorithm, err = lookupName("algorithm", f[3], hook.AlgoNames, true); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if ru.Protocol, err = lookupName("protocol", f[4], hook.ProtoNames, true); err != nil {
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
			if in.dst == &ru.RegBuff && v != -1 {
				return nil, fmt.Errorf("line %d: regBuff %d: whether the user buffers are registered is local to each rank, so a rule on it could make ranks choose differently and hang the collective; use -1 (any)", n, v)
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

// isHeader reports whether the fields f are a header row: a first field
// that names no collective and a min_bytes that is no number.
func isHeader(f []string) bool {
	if len(f) < 2 {
		return false
	}
	if _, err := lookupName("", f[0], hook.CollNames, false); err == nil {
		return false
	}
	_, err := strconv.ParseUint(f[1], 10, 64)
	return err != nil
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
// `ncclbpf_rules` in policies/src/rules.bpf.c; keep the two in step):
//
//	struct bucket { __u64 piv[RulesBucketPivots]; __u32 base, pad; };
//	struct rule   { __u64 key1, mask1; __u32 key2, mask2, need; __s32 algorithm, protocol, n_channels; __u32 line, pad[5]; };
//	struct table  { struct bucket b[NumColls][RulesBuckets]; struct rule rb[NumColls][RulesBuckets][RulesMaxCand];
//	                struct rule r[NumColls][RulesMaxIvl][RulesMaxCand]; __u64 lo[NumColls][RulesMaxIvl]; };
//
// For each collective the size axis is cut into ranges at every rule
// boundary; lo[c][i] is the first size of range i (lo[c][0] = 0) and
// r[c][i] lists, in file order, the rules whose size range covers it (need
// = 0 ends the list). A size n is first placed in its power-of-two range
// [2^k, 2^(k+1)) (k = 0 also takes 0), whose bucket is b[c][RulesBucket(n)]:
// the index of the range holding 2^k, which is n's range unless ranges
// begin strictly inside the power-of-two range (RulesBucketSplit); then
// the bucket lists their starts and n's range is that index plus the
// number of those starts <= n. rb[c][RulesBucket(n)] repeats the rules of
// the range holding 2^k, so that an unsplit bucket's rules are read at an
// address that does not wait for the bucket. A power-of-two range with more than
// RulesBucketPivots starts is marked RulesBucketWide and searched in lo[c]
// instead (sizes there are below 2^63: lo values are capped at 2^63, unused
// entries are 2^63). A rule matches when
// ((key1 ^ nodes<<32|ranks) & mask1) | ((key2 ^ pipeOps) & mask2) is 0 (a
// wildcard clears its mask bits) and NCCL has one of the cells in need
// available. A lookup costs one bucket, seven comparisons and at most
// RulesMaxCand tests, however many rules the file has.
const (
	RulesVar          = "ncclbpf_rules"
	RulesLogVar       = "log_matches" // nonzero: the policy reports the matching rule's line (bpf_printk)
	RulesMaxIvl       = 512
	RulesMaxCand      = 8
	RuleSize          = 64
	RulesBuckets      = 64
	RulesBucketSize   = 64
	RulesBucketPivots = 7
	RulesBucketSplit  = 1 << 30
	RulesBucketWide   = 1 << 31
	RulesTableSize    = rulesLoOff + NumColls*RulesMaxIvl*8

	rulesBucketRuleOff = NumColls * RulesBuckets * RulesBucketSize
	rulesRuleOff       = rulesBucketRuleOff + NumColls*RulesBuckets*RulesMaxCand*RuleSize
	rulesLoOff         = rulesRuleOff + NumColls*RulesMaxIvl*RulesMaxCand*RuleSize
	rulesLoCap         = 1 << 63
)

// RulesHashMul maps a size's power-of-two range to its bucket: for n in
// [2^k, 2^(k+1)), with s = n with every bit below its highest set
// (s = 2^(k+1) - 1), the bucket is (s * RulesHashMul) >> 58, distinct for
// each k (a de Bruijn-like multiplier, checked by init).
const RulesHashMul = 0x03f79d71b4cb0a89

// RulesBucket returns the bucket of size n (0 and 1 share one).
func RulesBucket(n uint64) int {
	for sh := 1; sh < 64; sh *= 2 {
		n |= n >> sh
	}
	return int((n * RulesHashMul) >> 58)
}

func init() {
	var seen [RulesBuckets]bool
	for k := 0; k < 64; k++ {
		h := RulesBucket(1 << k)
		if seen[h] {
			panic(fmt.Sprintf("tuner: RulesHashMul maps two power-of-two ranges to bucket %d", h))
		}
		seen[h] = true
	}
}

// columnCells are the cells (a, 0) of every algorithm; shifted left by p
// they are protocol p's column.
const columnCells = 0x49249

// need returns the cost cells of which NCCL must have one available for r
// to apply.
func (r Rule) need() uint32 {
	switch {
	case r.Algorithm >= 0 && r.Protocol >= 0:
		return 1 << (r.Algorithm*3 + r.Protocol)
	case r.Algorithm >= 0:
		return 7 << (r.Algorithm * 3)
	case r.Protocol >= 0:
		return columnCells << r.Protocol
	}
	return 1<<21 - 1
}

func keyMask(hi, lo int) (key, mask uint64) {
	if hi != -1 {
		key |= uint64(uint32(hi)) << 32
		mask |= 0xffffffff << 32
	}
	if lo != -1 {
		key |= uint64(uint32(lo))
		mask |= 0xffffffff
	}
	return key, mask
}

// RulesTable builds the bytes of the rule table for rules.
func RulesTable(rules []Rule) ([]byte, error) {
	b := make([]byte, RulesTableSize)
	for c := 0; c < NumColls; c++ {
		var mine []Rule
		for _, r := range rules {
			if r.Coll != c {
				continue
			}
			if r.RegBuff != -1 {
				return nil, fmt.Errorf("line %d: regBuff %d: the policy cannot match on regBuff (local to each rank); use -1 (any)", r.Line, r.RegBuff)
			}
			mine = append(mine, r)
		}
		los, cands, err := sizeRanges(c, mine)
		if err != nil {
			return nil, err
		}
		if err := putRanges(b, c, los, cands); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// sizeRanges cuts the size axis of collective c at every boundary of its
// rules: the first size of each range and, in file order, the rules that
// cover it. Neighbours with equal lists are merged.
func sizeRanges(c int, mine []Rule) ([]uint64, [][]Rule, error) {
	cuts := map[uint64]bool{0: true}
	for _, r := range mine {
		cuts[r.MinBytes] = true
		if r.MaxBytes != math.MaxUint64 {
			cuts[r.MaxBytes+1] = true
		}
	}
	starts := make([]uint64, 0, len(cuts))
	for v := range cuts {
		starts = append(starts, v)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
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
		return nil, nil, fmt.Errorf("collective %s: the rules cut the size axis into %d ranges; at most %d are supported",
			hook.CollNames[c], len(los), RulesMaxIvl)
	}
	for i, cs := range cands {
		if len(cs) <= RulesMaxCand {
			continue
		}
		hi := uint64(math.MaxUint64)
		if i+1 < len(los) {
			hi = los[i+1] - 1
		}
		// Name a few lines, not thousands: the message goes to NCCL's log.
		var lines []string
		for k, r := range cs {
			if k == 8 {
				lines = append(lines, fmt.Sprintf("and %d more", len(cs)-k))
				break
			}
			lines = append(lines, strconv.Itoa(r.Line))
		}
		return nil, nil, fmt.Errorf("collective %s, sizes %d..%d: %d rules overlap (lines %s); at most %d may",
			hook.CollNames[c], los[i], hi, len(cs), strings.Join(lines, ","), RulesMaxCand)
	}
	return los, cands, nil
}

// putRanges writes collective c's buckets, range starts and candidates.
func putRanges(b []byte, c int, los []uint64, cands [][]Rule) error {
	le := binary.LittleEndian
	for i := 0; i < RulesMaxIvl; i++ {
		lo := uint64(rulesLoCap)
		if i < len(los) {
			lo = min(los[i], rulesLoCap)
		}
		le.PutUint64(b[rulesLoOff+(c*RulesMaxIvl+i)*8:], lo)
	}
	for k := 0; k < 64; k++ {
		first, end := uint64(1)<<k, uint64(1)<<(k+1) // end 0: 2^64
		if k == 0 {
			first = 0
		}
		base := sort.Search(len(los), func(i int) bool { return los[i] > first }) - 1
		var inside []uint64
		for _, lo := range los[base+1:] {
			if end != 0 && lo >= end {
				break
			}
			inside = append(inside, lo)
		}
		p := (c*RulesBuckets + RulesBucket(first)) * RulesBucketSize
		word := uint32(base)
		if len(inside) > 0 {
			word |= RulesBucketSplit
		}
		if len(inside) > RulesBucketPivots {
			if k == 63 {
				return fmt.Errorf("collective %s: %d size ranges start above 2^63; at most %d may",
					hook.CollNames[c], len(inside), RulesBucketPivots)
			}
			word = uint32(base) | RulesBucketWide
			inside = nil
		}
		for j := 0; j < RulesBucketPivots; j++ {
			piv := end // never <= a size of this bucket
			if j < len(inside) {
				piv = inside[j]
			}
			le.PutUint64(b[p+8*j:], piv)
		}
		le.PutUint32(b[p+8*RulesBucketPivots:], word)
		putRules(b[rulesBucketRuleOff+(c*RulesBuckets+RulesBucket(first))*RulesMaxCand*RuleSize:], cands[base])
	}
	for i, cs := range cands {
		putRules(b[rulesRuleOff+(c*RulesMaxIvl+i)*RulesMaxCand*RuleSize:], cs)
	}
	return nil
}

// putRules writes the candidate rules cs of one range at the start of b.
func putRules(b []byte, cs []Rule) {
	le := binary.LittleEndian
	for k, r := range cs {
		p := k * RuleSize
		k1, m1 := keyMask(r.Nodes, r.Ranks)
		k2, m2 := keyMask(-1, r.PipeOps)
		le.PutUint64(b[p:], k1)
		le.PutUint64(b[p+8:], m1)
		le.PutUint32(b[p+16:], uint32(k2))
		le.PutUint32(b[p+20:], uint32(m2))
		le.PutUint32(b[p+24:], r.need())
		ch := r.Channels
		if ch == -1 {
			ch = 0 // the context's "leave it to NCCL"
		}
		le.PutUint32(b[p+28:], uint32(int32(r.Algorithm)))
		le.PutUint32(b[p+32:], uint32(int32(r.Protocol)))
		le.PutUint32(b[p+36:], uint32(int32(ch)))
		le.PutUint32(b[p+40:], uint32(r.Line))
	}
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
// call, with -1/-1/0 when none applies. avail reports whether NCCL marked
// cell (a, p) available.
func Decide(rules []Rule, coll int, nBytes uint64, nodes, ranks, pipeOps, regBuff int, avail func(a, p int) bool) (algo, proto, channels int) {
	for _, r := range rules {
		if r.Coll != coll || nBytes < r.MinBytes || nBytes > r.MaxBytes {
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
		for a := 0; a < len(hook.AlgoNames); a++ {
			if avail(a, r.Protocol) {
				return true
			}
		}
		return false
	}
	return true
}

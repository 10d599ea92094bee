package tuner

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"
)

const sampleRules = `# collective,min,max,algo,proto,channels,nNodes,nRanks[,pipeOps[,regBuff]]
allreduce,0,65535,tree,ll,-1,-1,-1
allreduce, 65536 , 1048575 , ring , ll128 , 8 , 1 , -1
allreduce,0,18446744073709551615,ring,simple,-1,-1,-1
allgather,1024,4096,default,simple,2,-1,8,1,-1
reducescatter,0,100,nvls,-1,-1,-1,-1,-1

broadcast,10,20,pat,ll,-1,2,16,-1
`

func TestParseRules(t *testing.T) {
	rs, err := ParseRules(strings.NewReader(sampleRules))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Coll: 4, MinBytes: 0, MaxBytes: 65535, Algorithm: 0, Protocol: 0, Channels: -1, Nodes: -1, Ranks: -1, PipeOps: -1, RegBuff: -1, Line: 2},
		{Coll: 4, MinBytes: 65536, MaxBytes: 1048575, Algorithm: 1, Protocol: 1, Channels: 8, Nodes: 1, Ranks: -1, PipeOps: -1, RegBuff: -1, Line: 3},
		{Coll: 4, MinBytes: 0, MaxBytes: math.MaxUint64, Algorithm: 1, Protocol: 2, Channels: -1, Nodes: -1, Ranks: -1, PipeOps: -1, RegBuff: -1, Line: 4},
		{Coll: 2, MinBytes: 1024, MaxBytes: 4096, Algorithm: -1, Protocol: 2, Channels: 2, Nodes: -1, Ranks: 8, PipeOps: 1, RegBuff: -1, Line: 5},
		{Coll: 3, MinBytes: 0, MaxBytes: 100, Algorithm: 4, Protocol: -1, Channels: -1, Nodes: -1, Ranks: -1, PipeOps: -1, RegBuff: -1, Line: 6},
		{Coll: 0, MinBytes: 10, MaxBytes: 20, Algorithm: 6, Protocol: 0, Channels: -1, Nodes: 2, Ranks: 16, PipeOps: -1, RegBuff: -1, Line: 8},
	}
	if len(rs) != len(want) {
		t.Fatalf("got %d rules, want %d: %+v", len(rs), len(want), rs)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("rule %d = %+v\nwant %+v", i, rs[i], want[i])
		}
	}
	for _, bad := range []string{
		"allreduce,0,10,ring,simple,-1,-1",          // 7 fields
		"allreduce,0,10,ring,simple,-1,-1,-1,1,0,9", // 11 fields
		"allreduces,0,10,ring,simple,-1,-1,-1",
		"allreduce,0,10,warp,simple,-1,-1,-1",
		"allreduce,0,10,ring,ll64,-1,-1,-1",
		"allreduce,10,0,ring,simple,-1,-1,-1",
		"allreduce,x,10,ring,simple,-1,-1,-1",
		"allreduce,0,10,ring,simple,0,-1,-1",
		"allreduce,0,10,ring,simple,65,-1,-1",
		"allreduce,0,10,ring,simple,-1,-1,-1,1,2",
		"allreduce,0,10,ring,simple,-1,-1,-1,1,0", // regBuff is rank-local
		"allreduce,0,10,ring,simple,-1,-1,-1,-1,1",
	} {
		if _, err := ParseRules(strings.NewReader("# c\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want one naming line 2", bad, err)
		}
	}
}

// lookupTable is the rules policy's algorithm in Go over the bytes RulesTable
// builds: the bucket, its starts (or the search of lo in a wide bucket) and
// the candidate tests of policies/src/rules.bpf.c.
func lookupTable(b []byte, coll int, n uint64, nodes, ranks, pipe int, avail func(a, p int) bool) (int, int, int) {
	le := binary.LittleEndian
	bk := (coll*RulesBuckets + RulesBucket(n)) * RulesBucketSize
	i := int(le.Uint32(b[bk+8*RulesBucketPivots:]))
	cands := rulesBucketRuleOff + (coll*RulesBuckets+RulesBucket(n))*RulesMaxCand*RuleSize
	if i&(RulesBucketSplit|RulesBucketWide) != 0 {
		cands = -1
	}
	if i&RulesBucketSplit != 0 {
		i &^= RulesBucketSplit
		for j := 0; j < RulesBucketPivots; j++ {
			i += int((le.Uint64(b[bk+8*j:]) + ^n) >> 63)
		}
	}
	if i&RulesBucketWide != 0 {
		lo := func(i int) uint64 { return le.Uint64(b[rulesLoOff+(coll*RulesMaxIvl+i)*8:]) }
		m := min(n, rulesLoCap-1)
		i = 0
		for step := RulesMaxIvl / 2; step > 0; step /= 2 {
			if lo(i+step) <= m {
				i += step
			}
		}
	}
	var mask uint32
	for c := 0; c < 21; c++ {
		if avail(c/3, c%3) {
			mask |= 1 << c
		}
	}
	k1 := uint64(uint32(nodes))<<32 | uint64(uint32(ranks))
	k2 := uint32(pipe)
	if cands < 0 {
		cands = rulesRuleOff + (coll*RulesMaxIvl+i)*RulesMaxCand*RuleSize
	}
	for k := 0; k < RulesMaxCand; k++ {
		p := cands + k*RuleSize
		u := func(o int) uint64 { return le.Uint64(b[p+o:]) }
		w := func(o int) uint32 { return le.Uint32(b[p+o:]) }
		if w(24) == 0 {
			break
		}
		if ((u(0)^k1)&u(8)) != 0 || (w(16)^k2)&w(20) != 0 || w(24)&mask == 0 {
			continue
		}
		f := func(o int) int { return int(int32(w(o))) }
		return f(28), f(32), f(36)
	}
	return -1, -1, 0
}

func TestRulesTableMatchesFirstMatch(t *testing.T) {
	rs, err := ParseRules(strings.NewReader(sampleRules))
	if err != nil {
		t.Fatal(err)
	}
	b, err := RulesTable(rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != RulesTableSize {
		t.Fatalf("table size %d", len(b))
	}
	sizes := []uint64{0, 1, 9, 10, 20, 21, 100, 101, 1023, 1024, 4096, 4097, 65535, 65536, 1048575, 1048576, math.MaxUint64}
	avails := []func(a, p int) bool{
		func(a, p int) bool { return true },
		func(a, p int) bool { return !(a == 0 && p == 0) }, // tree/LL unavailable
		func(a, p int) bool { return p != 1 },              // no LL128
		func(a, p int) bool { return a != 4 && a != 1 },    // no NVLS, no ring
		func(a, p int) bool { return false },               // nothing
	}
	n := 0
	for coll := 0; coll < NumColls; coll++ {
		for _, s := range sizes {
			for _, nodes := range []int{1, 2} {
				for _, ranks := range []int{8, 16} {
					for _, av := range avails {
						for _, reg := range []int{0, 1, -1} {
							a1, p1, c1 := Decide(rs, coll, s, nodes, ranks, 1, reg, av)
							a2, p2, c2 := lookupTable(b, coll, s, nodes, ranks, 1, av)
							if a1 != a2 || p1 != p2 || c1 != c2 {
								t.Errorf("coll %d size %d nodes %d ranks %d reg %d: table %d/%d/%d, first match %d/%d/%d",
									coll, s, nodes, ranks, reg, a2, p2, c2, a1, p1, c1)
							}
							n++
						}
					}
				}
			}
		}
	}
	// Spot checks of the reference itself.
	all := avails[0]
	if a, p, c := Decide(rs, 4, 70000, 1, 8, 1, 0, all); a != 1 || p != 1 || c != 8 {
		t.Errorf("allreduce 70000 on 1 node: %d/%d/%d", a, p, c)
	}
	if a, p, c := Decide(rs, 4, 70000, 2, 8, 1, 0, all); a != 1 || p != 2 || c != 0 {
		t.Errorf("allreduce 70000 on 2 nodes: %d/%d/%d", a, p, c)
	}
	if a, p, _ := Decide(rs, 4, 100, 1, 8, 1, 0, avails[1]); a != 1 || p != 2 {
		t.Errorf("allreduce 100 without tree/LL: %d/%d (the next rule should apply)", a, p)
	}
}

func TestRulesTableLimits(t *testing.T) {
	var many strings.Builder
	for i := 0; i < RulesMaxCand+1; i++ {
		many.WriteString("allreduce,0,100,ring,simple,-1,-1,-1\n")
	}
	rs, _ := ParseRules(strings.NewReader(many.String()))
	if _, err := RulesTable(rs); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("9 overlapping rules: %v", err)
	}
	var cuts strings.Builder
	for i := 0; i < RulesMaxIvl; i++ {
		cuts.WriteString("allreduce," + itoa(2*i+1) + "," + itoa(2*i+1) + ",ring,simple,-1,-1,-1\n")
	}
	rs, _ = ParseRules(strings.NewReader(cuts.String()))
	if _, err := RulesTable(rs); err == nil || !strings.Contains(err.Error(), "ranges") {
		t.Errorf("%d disjoint rules: %v", RulesMaxIvl, err)
	}
	// Ranges above 2^63 are found without the search of lo: at most RulesBucketPivots may start
	// inside [2^63, 2^64); below, a power-of-two range takes any number.
	above := func(base uint64, n int) []Rule {
		var rs []Rule
		for i := 0; i < n; i++ {
			lo := base + uint64(1000*i+1)
			rs = append(rs, Rule{Coll: 4, MinBytes: lo, MaxBytes: lo + 10, Algorithm: 1, Protocol: 2, Channels: -1,
				Nodes: -1, Ranks: -1, PipeOps: -1, RegBuff: -1, Line: i + 1})
		}
		return rs
	}
	if _, err := RulesTable(above(1<<63, 3)); err != nil {
		t.Errorf("3 rules above 2^63 (6 starts): %v", err)
	}
	if _, err := RulesTable(above(1<<63, 4)); err == nil || !strings.Contains(err.Error(), "above 2^63") {
		t.Errorf("4 rules above 2^63 (8 starts): %v", err)
	}
	if _, err := RulesTable(above(1<<62, 40)); err != nil {
		t.Errorf("40 rules in [2^62, 2^63): %v", err)
	}
	// A rule on regBuff cannot be put in the table (ParseRules refuses it first).
	if _, err := RulesTable([]Rule{{Coll: 4, MaxBytes: 10, Algorithm: 1, Protocol: 2, Channels: -1, Nodes: -1, Ranks: -1,
		PipeOps: -1, RegBuff: 1, Line: 7}}); err == nil || !strings.Contains(err.Error(), "line 7: regBuff") {
		t.Errorf("a rule on regBuff: %v", err)
	}
	// 100 rules of one collective fit.
	cuts.Reset()
	for i := 0; i < 100; i++ {
		cuts.WriteString("allreduce," + itoa(100*i) + "," + itoa(100*i+150) + ",ring,simple,-1,-1,-1\n")
	}
	rs, _ = ParseRules(strings.NewReader(cuts.String()))
	if _, err := RulesTable(rs); err != nil {
		t.Errorf("100 rules: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// Thousands of overlapping rules give a message of a few lines' numbers,
// not one number per rule (it goes to NCCL's log): before, tens of kB.
func TestRulesOverlapMessageIsShort(t *testing.T) {
	var many strings.Builder
	for i := 0; i < 5000; i++ {
		many.WriteString("allreduce,0,100,ring,simple,-1,-1,-1\n")
	}
	rs, err := ParseRules(strings.NewReader(many.String()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = RulesTable(rs)
	if err == nil || !strings.Contains(err.Error(), "5000 rules overlap") || !strings.Contains(err.Error(), "and 4992 more") ||
		len(err.Error()) > 300 {
		t.Fatalf("%d bytes: %v", len(err.Error()), err)
	}
}

// TestParseRulesHeaderAndComments: a header row of column names as the
// first line is skipped (NCCL's example tuner documents one for
// spreadsheets), '#' starts a comment at the start of a line or after the
// fields, and a header anywhere else is an error naming its line.
func TestParseRulesHeaderAndComments(t *testing.T) {
	const file = `# exported from a spreadsheet
collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
allreduce,0,65536,tree,simple,2,1,-1,-1,-1   # small: tree
  # indented comment
allreduce,65537,4294967295,ring,ll128,-1,-1,-1 #large
`
	rs, err := ParseRules(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Coll: 4, MinBytes: 0, MaxBytes: 65536, Algorithm: 0, Protocol: 2, Channels: 2, Nodes: 1, Ranks: -1, PipeOps: -1, RegBuff: -1, Line: 3},
		{Coll: 4, MinBytes: 65537, MaxBytes: 4294967295, Algorithm: 1, Protocol: 1, Channels: -1, Nodes: -1, Ranks: -1, PipeOps: -1, RegBuff: -1, Line: 5},
	}
	if len(rs) != len(want) || rs[0] != want[0] || rs[1] != want[1] {
		t.Fatalf("got %+v\nwant %+v", rs, want)
	}
	for _, h := range []string{"coll,min,max,algo,proto,ch,nodes,ranks", "collective_type,min_bytes,max_bytes"} {
		rs, err := ParseRules(strings.NewReader(h + "\n"))
		if err != nil || len(rs) != 0 {
			t.Errorf("header %q alone: %v rules, error %v; want none and no error", h, rs, err)
		}
	}
	_, err = ParseRules(strings.NewReader("allreduce,0,1,ring,simple,-1,-1,-1\ncollective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a header after a rule: error %v, want one naming line 2", err)
	}
}

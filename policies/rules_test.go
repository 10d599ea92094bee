package policies_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/tuner"
	"github.com/ncclbpf/ncclbpf/policies"
	"github.com/ncclbpf/ncclbpf/vm"
)

// randomRules writes a rules file in the example CSV tuner's format: few
// collectives, sizes drawn from a small pool (so that ranges overlap, nest
// and share bounds), runs of starts inside one power-of-two range (more
// than a bucket holds: the search in lo), bounds near 2^63 and 2^64,
// wildcards and values for nodes, ranks and pipelined ops.
func randomRules(r *rand.Rand) string {
	pool := []uint64{0, 1, 2, 3, 1023, 1024, 1025, 4096, 65535, 65536, 1 << 20, 3 << 19, 1<<20 + 1,
		1<<31 - 1, 1 << 31, 1 << 32, 1<<63 - 1, 1 << 63, 1<<63 + 1, 3 << 62, math.MaxUint64 - 1, math.MaxUint64}
	var dense []uint64
	if r.Intn(2) == 0 { // many starts inside one power-of-two range
		k := []int{1, 2, 9, 20, 40, 62, 63}[r.Intn(7)]
		lo := uint64(1) << k
		for j := 0; j < 12; j++ {
			dense = append(dense, lo+uint64(r.Int63n(int64(min(lo, 1<<62)))))
		}
	}
	size := func() uint64 {
		switch {
		case len(dense) > 0 && r.Intn(2) == 0:
			return dense[r.Intn(len(dense))]
		case r.Intn(4) == 0:
			return r.Uint64() >> r.Intn(64)
		}
		return pool[r.Intn(len(pool))]
	}
	colls := []string{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}
	algos := []string{"-1", "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat", "default"}
	protos := []string{"-1", "ll", "ll128", "simple", "default"}
	val := func(vals ...string) string { return vals[r.Intn(len(vals))] }
	var b strings.Builder
	b.WriteString("# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n")
	nColl := 1 + r.Intn(3)
	for i, n := 0, 1+r.Intn(30); i < n; i++ {
		lo, hi := size(), size()
		if lo > hi {
			lo, hi = hi, lo
		}
		fmt.Fprintf(&b, "%s,%d,%d,%s,%s,%s,%s,%s", colls[4-r.Intn(nColl)], lo, hi, val(algos...), val(protos...),
			val("-1", "-1", "1", "8", "64"), val("-1", "-1", "1", "2"), val("-1", "-1", "8", "16"))
		switch r.Intn(3) {
		case 1:
			fmt.Fprintf(&b, ",%s", val("-1", "1", "2"))
		case 2:
			fmt.Fprintf(&b, ",%s,-1", val("-1", "1", "2"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestRulesPolicyDifferential: for random rules files and random calls, the
// rules policy (verified, on the JIT and on the interpreter) decides what
// tuner.Decide, a plain loop over the rules in file order with the example
// tuner's tests, decides. (Mutations checked: the bucket's base off by one,
// a start counted with < instead of <=, the search in lo skipped, the empty
// slot not ending the candidates, each give mismatches.)
func TestRulesPolicyDifferential(t *testing.T) {
	obj, ok := policies.Object("rules")
	if !ok {
		t.Fatal("no builtin rules policy")
	}
	r := rand.New(rand.NewSource(1))
	ctxDef := &hook.Get(hook.Tuner).Context
	field := func(name string) hook.Elem {
		e, err := ctxDef.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	in := map[string]hook.Elem{}
	for _, n := range []string{"n_bytes", "coll_type", "num_pipe_ops", "reg_buff", "n_ranks", "n_nodes", "avail_mask",
		"algorithm", "protocol", "n_channels"} {
		in[n] = field(n)
	}
	engines := []struct {
		name string
		e    vm.Engine
	}{{"jit", nil}, {"interpreter", vm.NewInterpreter()}}
	files, calls, applied, wideFiles, wideCalls, splitCalls, refused := 0, 0, 0, 0, 0, 0, 0
	for files < 120 {
		text := randomRules(r)
		rules, err := tuner.ParseRules(strings.NewReader(text))
		if err != nil {
			t.Fatalf("generated file does not parse: %v\n%s", err, text)
		}
		table, err := tuner.RulesTable(rules)
		if err != nil {
			refused++ // too many overlapping rules or ranges: the loader says so
			continue
		}
		if len(rules) == 0 {
			continue
		}
		files++
		flags := bucketFlags(table)
		for _, f := range flags {
			if f&tuner.RulesBucketWide != 0 {
				wideFiles++
				break
			}
		}
		// Sizes: every bound, its neighbours, and random ones.
		var sizes []uint64
		for _, ru := range rules {
			sizes = append(sizes, ru.MinBytes, ru.MinBytes-1, ru.MinBytes+1, ru.MaxBytes, ru.MaxBytes+1, ru.MaxBytes-1)
		}
		for j := 0; j < 40; j++ {
			sizes = append(sizes, r.Uint64()>>r.Intn(64))
		}
		for _, eng := range engines {
			b, err := bundle.Load(obj, bundle.Options{Name: "builtin:rules", Engine: eng.e, Data: map[string][]byte{tuner.RulesVar: table}})
			if err != nil {
				t.Fatalf("%s: load: %v\n%s", eng.name, err, text)
			}
			p := b.Program(hook.Tuner)
			bad := 0
			for _, n := range sizes {
				coll := rules[r.Intn(len(rules))].Coll
				if r.Intn(8) == 0 {
					coll = r.Intn(tuner.NumColls)
				}
				nodes, ranks, pipe := 1+r.Intn(2), []int{4, 8, 16}[r.Intn(3)], 1+r.Intn(2)
				mask := uint32(1<<21 - 1)
				if r.Intn(2) == 0 {
					mask = r.Uint32() & (1<<21 - 1)
				}
				ctx := make([]byte, ctxDef.Size)
				for name, v := range map[string]uint64{"n_bytes": n, "coll_type": uint64(coll), "num_pipe_ops": uint64(pipe),
					"reg_buff": uint64(r.Intn(2)), "n_ranks": uint64(ranks), "n_nodes": uint64(nodes), "avail_mask": uint64(mask),
					"algorithm": math.MaxUint32, "protocol": math.MaxUint32, "n_channels": 0} {
					if err := in[name].Put(ctx, v); err != nil {
						t.Fatal(err)
					}
				}
				rc, err := p.Exec.Run(ctx)
				if err != nil {
					t.Fatalf("%s: run: %v", eng.name, err)
				}
				avail := func(a, p int) bool { return mask&(1<<(a*3+p)) != 0 }
				wa, wp, wc := tuner.Decide(rules, coll, n, nodes, ranks, pipe, 0, avail)
				ga, gp, gc := int(in["algorithm"].Signed(ctx)), int(in["protocol"].Signed(ctx)), int(in["n_channels"].Signed(ctx))
				if rc != hook.TunerApply || ga != wa || gp != wp || gc != wc {
					if bad++; bad <= 5 {
						t.Errorf("%s: %s %d bytes, %d nodes, %d ranks, %d pipe ops, avail %#x: r0 %d, %d/%d/%d; first match %d/%d/%d\n%s",
							eng.name, hook.CollNames[coll], n, nodes, ranks, pipe, mask, rc, ga, gp, gc, wa, wp, wc, text)
					}
				}
				calls++
				if wa != -1 || wp != -1 || wc != 0 {
					applied++
				}
				switch flags[[2]int{coll, tuner.RulesBucket(n)}] {
				case tuner.RulesBucketWide:
					wideCalls++
				case tuner.RulesBucketSplit:
					splitCalls++
				}
			}
			b.Close()
		}
	}
	t.Logf("%d files (%d refused), %d calls, %d decided by a rule; power-of-two ranges split by a few starts: %d calls, "+
		"by more (searched in lo): %d files, %d calls", files, refused, calls, applied, splitCalls, wideFiles, wideCalls)
	if applied < calls/4 || splitCalls < 1000 || wideFiles < 10 || wideCalls < 100 || refused > files {
		t.Errorf("the random cases miss what they are for: %d of %d calls decided, %d calls in split buckets, "+
			"%d files and %d calls with wide buckets, %d files refused", applied, calls, splitCalls, wideFiles, wideCalls, refused)
	}
}

// bucketFlags maps the (collective, bucket) pairs of table that have one of
// the flags RulesBucketSplit and RulesBucketWide to their flags.
func bucketFlags(table []byte) map[[2]int]uint32 {
	out := map[[2]int]uint32{}
	for c := 0; c < tuner.NumColls; c++ {
		for k := 0; k < tuner.RulesBuckets; k++ {
			p := (c*tuner.RulesBuckets+k)*tuner.RulesBucketSize + 8*tuner.RulesBucketPivots
			if f := binary.LittleEndian.Uint32(table[p:]) & (tuner.RulesBucketSplit | tuner.RulesBucketWide); f != 0 {
				out[[2]int{c, k}] = f
			}
		}
	}
	return out
}

package policybench

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/ncclbpf/ncclbpf/vm"
)

// policy is one program of an example policy, ready to verify, compile and run.
type policy struct {
	name string
	hook *hook.Hook
	cfg  verifier.Config
	prog *vm.Program
	ctx  []byte
}

var objects = []string{
	"../../policies/noop.bpf.o",
	"../../policies/size_aware.bpf.o",
	"../../policies/rules.bpf.o",
	"../../policies/latency_stats/latency_stats.bpf.o",
	"../../policies/adaptive/adaptive.bpf.o",
}

// load returns every program of the example policies with live maps.
func load(tb testing.TB) []*policy {
	tb.Helper()
	var out []*policy
	for _, path := range objects {
		coll, err := loader.LoadFile(path)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		refs := make([]vm.MapRef, len(coll.Maps))
		for i, ms := range coll.Maps {
			m, err := maps.New(*ms)
			if err != nil {
				tb.Fatalf("%s: map %s: %v", path, ms.Name, err)
			}
			tb.Cleanup(func() { m.Close() })
			refs[i] = m.Ref()
		}
		for _, lp := range coll.Programs {
			h, err := hook.ForSection(lp.Section)
			if err != nil {
				tb.Fatalf("%s: %v", path, err)
			}
			cfg := verifier.ForProgram(coll, lp, h)
			out = append(out, &policy{
				name: fmt.Sprintf("%s/%s", filepath.Base(path), lp.Name),
				hook: h,
				cfg:  *cfg,
				prog: &vm.Program{Name: lp.Name, Insns: lp.Insns, Maps: refs, Helpers: maps.HelperTable()},
				ctx:  context(tb, h),
			})
		}
	}
	return out
}

// context returns a realistic context for h: a 4 MiB AllReduce on 8 ranks of
// one node, every cost cell available, or a completed collective of that size.
func context(tb testing.TB, h *hook.Hook) []byte {
	ctx := make([]byte, h.Context.Size)
	set := func(name string, v uint64) {
		if e, err := h.Context.Lookup(name); err == nil {
			if err := e.Put(ctx, v); err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
		}
	}
	for name, v := range map[string]uint64{
		"n_bytes": 4 << 20, "bytes": 4 << 20, "coll_type": 4, "func": 4, "n_ranks": 8, "n_nodes": 1,
		"n_nvl_domains": 1, "min_ranks_per_nvl_domain": 8, "max_ranks_per_nvl_domain": 8, "abi_version": 5,
		"avail_mask": 1<<21 - 1, "num_pipe_ops": 1, "algorithm": 1<<32 - 1, "protocol": 1<<32 - 1,
		"duration_ns": 250000, "end_ns": 1250000, "start_ns": 1000000, "n_channels": 0,
	} {
		set(name, v)
	}
	for i := 0; i < 21; i++ {
		set(fmt.Sprintf("cost[%d]", i), uint64(0x42480000+uint32(i)<<16)) // 50.0 upwards
	}
	return ctx
}

// TestPoliciesAgree checks that the benchmarks below measure what they
// claim: every example program verifies, compiles, and gives the same r0 on
// both engines for the benchmark's context.
func TestPoliciesAgree(t *testing.T) {
	// Each engine gets its own maps: stateful policies (adaptive) change
	// their maps on every run, so shared maps would give different inputs.
	ps, pj := load(t), load(t)
	if len(ps) < 6 {
		t.Fatalf("found %d programs in the example policies, want at least 6", len(ps))
	}
	for i, p := range ps {
		if _, err := p.cfg.Verify(p.prog.Insns, nil); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		xi, err := vm.NewInterpreter().Compile(p.prog)
		if err != nil {
			t.Fatalf("%s: interp: %v", p.name, err)
		}
		xj, err := native.New().Compile(pj[i].prog)
		if err != nil {
			t.Fatalf("%s: jit: %v", p.name, err)
		}
		ci, cj := append([]byte(nil), p.ctx...), append([]byte(nil), p.ctx...)
		ri, erri := xi.Run(ci)
		rj, errj := xj.Run(cj)
		if erri != nil || errj != nil || ri != rj || string(ci) != string(cj) {
			t.Errorf("%s: interp r0=%#x err=%v, jit r0=%#x err=%v, contexts equal: %v", p.name, ri, erri, rj, errj, string(ci) == string(cj))
		}
		xi.Close()
		xj.Close()
	}
}

// BenchmarkPolicies reports, for every program of the example policies, the
// verifier's time, the JIT's compile time (W^X mapping included) and one run
// on each engine through Executable.Run (the JIT pays one cgo call per run).
// Compare the engines with: benchstat -col /engine.
func BenchmarkPolicies(b *testing.B) {
	for _, p := range load(b) {
		b.Run(p.name+"/stage=verify", func(b *testing.B) {
			for b.Loop() {
				if _, err := p.cfg.Verify(p.prog.Insns, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/stage=compile", func(b *testing.B) {
			b.ReportMetric(float64(len(p.prog.Insns)), "insns")
			for b.Loop() {
				x, err := native.New().Compile(p.prog)
				if err != nil {
					b.Fatal(err)
				}
				x.Close()
			}
		})
		for _, e := range []vm.Engine{vm.NewInterpreter(), native.New()} {
			x, err := e.Compile(p.prog)
			if err != nil {
				b.Fatal(err)
			}
			ctx := append([]byte(nil), p.ctx...)
			b.Run(p.name+"/stage=run/engine="+e.Name(), func(b *testing.B) {
				for b.Loop() {
					copy(ctx, p.ctx)
					if _, err := x.Run(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			x.Close()
		}
	}
}

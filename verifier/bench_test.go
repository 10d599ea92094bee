package verifier_test

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/loader"
)

func benchProgram(b *testing.B, obj, name string) {
	coll, err := loader.LoadFile(obj)
	if err != nil {
		b.Fatal(err)
	}
	p := coll.Program(name)
	if p == nil {
		b.Fatalf("no program %s", name)
	}
	t := &testing.T{}
	cfg := configFor(t, coll, p)
	cfg.Source = nil
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cfg.Verify(p.Insns, nil)
	}
	b.ReportMetric(float64(len(p.Insns)), "insns")
}

func BenchmarkComplexityLimit(b *testing.B) {
	benchProgram(b, "../testdata/verifier/loops.o", "bad_loop_unbounded_count")
}

// BenchmarkVerifyPolicies measures the shipped example policies; the
// largest (adaptive_tune, 761 slots) must verify in under 1 ms.
func BenchmarkVerifyPolicies(b *testing.B) {
	for _, bc := range []struct{ obj, name string }{
		{"../policies/adaptive/adaptive.bpf.o", "adaptive_tune"},
		{"../policies/adaptive/adaptive.bpf.o", "adaptive_measure"},
		{"../policies/rules.bpf.o", "rules"},
		{"../policies/latency_stats/latency_stats.bpf.o", "latency_stats"},
	} {
		b.Run(bc.name, func(b *testing.B) { benchProgram(b, bc.obj, bc.name) })
	}
}

// BenchmarkVerifyCorpusSafe measures a realistic C policy with
// subprograms and loops.
func BenchmarkVerifyCorpusSafe(b *testing.B) {
	benchProgram(b, "../testdata/verifier/safe.o", "ok_cached_decision")
}

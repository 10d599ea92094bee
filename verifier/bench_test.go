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

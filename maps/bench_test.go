package maps_test

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/maps/internal/ctest"
)

// BenchmarkNative runs the C benchmark loops once: map helpers called
// through their function pointers next to a plain C array and a simple C
// hash table called the same way, so the ratios are from one run. Each
// variant is reported as a metric (ns/op of that variant); the benchmark's
// own ns/op is the time of the whole run divided by b.N.
//
//	go test ./maps/ -run '^$' -bench Native -benchtime 20000000x
func BenchmarkNative(b *testing.B) {
	env, _ := hammerEnv(b, 1, 1024)
	b.ResetTimer()
	ns := ctest.Bench(env, uint64(b.N))
	b.StopTimer()
	for i, name := range ctest.BenchNames {
		b.ReportMetric(ns[i], name+"-ns/op")
	}
}

func TestBenchNames(t *testing.T) {
	env, _ := hammerEnv(t, 1, 1024)
	if ns := ctest.Bench(env, 1000); len(ns) != len(ctest.BenchNames) {
		t.Fatalf("%d results, %d names", len(ns), len(ctest.BenchNames))
	}
}

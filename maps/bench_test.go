package maps_test

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/maps"
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
	env := benchEnv(b)
	b.ResetTimer()
	ns := ctest.Bench(env, uint64(b.N))
	b.StopTimer()
	for i, name := range ctest.BenchNames {
		b.ReportMetric(ns[i], name+"-ns/op")
	}
}

// benchEnv makes maps of 1024 entries (keys 0..1023 are all present
// during the benchmark: every lookup hits, every update replaces).
func benchEnv(tb testing.TB) *ctest.Env {
	env, _ := hammerEnv(tb, 1, 1024)
	h := mustNew(tb, maps.Spec{Name: "bench_hash", Type: maps.Hash, KeySize: 8, ValueSize: 16, MaxEntries: 1024})
	env.Hash = h.Handle()
	return env
}

func TestBenchSetup(t *testing.T) {
	env := benchEnv(t)
	if ns := ctest.Bench(env, 1000); len(ns) != len(ctest.BenchNames) {
		t.Fatalf("%d results, %d names", len(ns), len(ctest.BenchNames))
	}
	// Every map got all 1024 keys.
	for name, h := range map[string]uintptr{"hash": env.Hash, "lru": env.LRU} {
		key := ctest.Alloc(8, nil)
		for k := uint64(0); k < 1024; k++ {
			le.PutUint64(key.B, k)
			if ctest.Call(env.Lookup, uint64(h), key.Addr, 0, 0, 0) == 0 {
				t.Errorf("%s: key %d missing after the benchmark setup", name, k)
				break
			}
		}
		key.Free()
	}
}

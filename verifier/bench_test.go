package verifier_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/loader"
)

func benchProgram(b *testing.B, obj, name string) { benchProgramWith(b, obj, name, false) }

func benchProgramWith(b *testing.B, obj, name string, noUniformity bool) {
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
	cfg.DisableRankUniformity = noUniformity
	// the verdict is part of what is measured: a policy that stopped
	// verifying (or a limit program that stopped failing) fails the benchmark
	_, err = cfg.Verify(p.Insns, nil)
	if wantErr := strings.HasPrefix(name, "bad_"); (err != nil) != wantErr {
		b.Fatalf("%s: verify error %v, want rejected=%v", name, err, wantErr)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		cfg.Verify(p.Insns, nil)
	}
	b.StopTimer()
	// process CPU time (GC included) per verification: on a loaded
	// machine ns/op counts time spent waiting for a CPU, this does not
	// (run with GOMAXPROCS=1 so that it also excludes idle spinning)
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(p.Insns)), "insns")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkComplexityLimit(b *testing.B) {
	benchProgram(b, "../testdata/verifier/loops.o", "bad_loop_unbounded_count")
}

// BenchmarkVerifyPolicies measures the shipped example policies; the
// largest (adaptive_tune, 1347 slots) must verify in under 1 ms (median;
// on a loaded machine read cpu-ns/op, measured with GOMAXPROCS=1).
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

// BenchmarkVerifyUniformity measures the largest tuner program with the
// rank-uniformity analysis on and off, side by side.
func BenchmarkVerifyUniformity(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := "analysis=on"
		if off {
			name = "analysis=off"
		}
		b.Run(name, func(b *testing.B) {
			benchProgramWith(b, "../policies/adaptive/adaptive.bpf.o", "adaptive_tune", off)
		})
	}
}

// BenchmarkVerifyCorpusSafe measures a realistic C policy with
// subprograms and loops.
func BenchmarkVerifyCorpusSafe(b *testing.B) {
	benchProgram(b, "../testdata/verifier/safe.o", "ok_cached_decision")
}

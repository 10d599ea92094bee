package verifier_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// Programs built to make the verifier work as long as it can. Each
// verification must end within its step budget, and a step must cost a
// bounded time, so that a hostile or unlucky policy cannot stall NCCL's
// init (the plugin verifies inside it).

// advCounter counts up with no bound.
func advCounter() string { return "mov %r0, 0\nmov %r1, 0\nl:\nadd %r1, 1\njne %r1, 0, l\nexit\n" }

// advLoopStates: a loop whose head sees many different states (k
// diamonds add different constants to r6..r9), each compared with the
// states stored there.
func advLoopStates(k int) string {
	var b strings.Builder
	b.WriteString("mov %r0, 0\nmov %r6, 0\nmov %r7, 0\nmov %r8, 0\nmov %r9, 0\nl:\ncall 7\n") // r0 = prandom
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, "jgt %%r0, %d, a%d\nadd %%r%d, %d\na%d:\n", 1000*i, i, 6+i%4, i+1, i)
	}
	b.WriteString("add %r9, 1\njne %r9, 0, l\nmov %r0, 0\nexit\n")
	return b.String()
}

// advPaths: k diamonds one after the other, 2^k paths.
func advPaths(k int) string {
	var b strings.Builder
	b.WriteString("call 7\nmov %r6, %r0\nmov %r7, 0\n")
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, "call 7\njgt %%r0, 5, a%d\nadd %%r7, %d\na%d:\n", i, 1<<i, i)
	}
	b.WriteString("mov %r0, 0\nexit\n")
	return b.String()
}

// advDeep: frames nested calls, each filling its 512-byte stack with
// spilled pointers, then the innermost frame loops through diamonds: every
// state comparison and copy is as large as it can be.
func advDeep(k int, frames int) string {
	var b strings.Builder
	b.WriteString("mov %r0, 0\n")
	for f := 0; f < frames; f++ {
		fmt.Fprintf(&b, "call local f%d\nmov %%r0, 0\nexit\nf%d:\n", f, f)
		for o := 8; o <= 64*8; o += 8 {
			fmt.Fprintf(&b, "stxdw [%%r10-%d], %%r10\n", o)
		}
	}
	b.WriteString("mov %r6, 0\nmov %r7, 0\nmov %r8, 0\nmov %r9, 0\nl:\ncall 7\n")
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, "jgt %%r0, %d, a%d\nadd %%r%d, %d\na%d:\n", 1000*i, i, 6+i%4, i+1, i)
	}
	b.WriteString("add %r9, 1\njne %r9, 0, l\nmov %r0, 0\nexit\n")
	return b.String()
}

// advCtl (tuner hook): n nested branches on a rank-local value (n active
// implicit flows), then an unbounded loop.
func advCtl(n, k int) string {
	var b strings.Builder
	b.WriteString("call 5\nmov %r6, %r0\nmov %r0, 0\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "jgt %%r6, %d, e%d\n", i, i)
	}
	b.WriteString("mov %r7, 0\nmov %r8, 0\nmov %r9, 0\nl:\ncall 7\n")
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, "jgt %%r0, %d, a%d\nadd %%r%d, %d\na%d:\n", 1000*i, i, 7+i%3, i+1, i)
	}
	b.WriteString("add %r9, 1\njne %r9, 0, l\n")
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "e%d:\nadd %%r7, 1\n", i)
	}
	b.WriteString("mov %r0, 0\nexit\n")
	return b.String()
}

// advBig: n branches forward to one exit.
func advBig(n int) string {
	var b strings.Builder
	b.WriteString("call 7\nmov %r6, %r0\nmov %r0, 0\nmov %r7, 0\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "jgt %%r6, %d, z\nadd %%r7, 1\n", i)
	}
	b.WriteString("z:\nmov %r0, 0\nexit\n")
	return b.String()
}

// advLadder: n nested loops sharing one counter.
func advLadder(n int) string {
	var b strings.Builder
	b.WriteString("mov %r0, 0\nmov %r6, 0\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "h%d:\nadd %%r6, 1\n", i)
	}
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "jlt %%r6, 3, h%d\n", i)
	}
	b.WriteString("exit\n")
	return b.String()
}

// TestVerificationTimeBounded: every adversary ends (accepted or refused
// with E026) within its budget, in well under a second on a loaded
// 2-core machine (about 0.1 s at most when measured). When the budget
// counted only instructions visited, advLoopStates(20) took 5 s and
// advDeep(20, 7) 154 s (mutation: stateCost returning 0 fails those
// cases again).
func TestVerificationTimeBounded(t *testing.T) {
	const limit = time.Second
	for _, c := range []struct {
		name, src string
		accept    bool
	}{
		{"counter", advCounter(), false},
		{"loop states 8", advLoopStates(8), false},
		{"loop states 20", advLoopStates(20), false},
		{"paths 24", advPaths(24), true},
		{"deep 8 frames 7", advDeep(8, 7), false},
		{"deep 20 frames 7", advDeep(20, 7), false},
		{"deep 20 frames 3", advDeep(20, 3), false},
		{"branches 16000", advBig(16000), true},
		{"nested loops 10000", advLadder(10000), true},
		{"local branches 100", advCtl(100, 8), false},
		{"local branches 5000", advCtl(5000, 8), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := asm.Assemble(c.src)
			if err != nil {
				t.Fatal(err)
			}
			h := hook.Get("vtest")
			if strings.HasPrefix(c.name, "local") {
				h = hook.Get(hook.Tuner)
			}
			cfg := verifier.Config{Hook: h, Maps: asmMaps, MaxStack: 8 * 512}
			start := time.Now()
			_, err = cfg.Verify(insns, nil)
			took := time.Since(start)
			var ve *verifier.Error
			switch {
			case c.accept && err != nil:
				t.Fatalf("rejected: %v", err)
			case !c.accept && (!errors.As(err, &ve) || ve.Code != verifier.Complexity):
				t.Fatalf("got %v, want E026", err)
			}
			t.Logf("%v", took)
			if took > limit {
				t.Errorf("verification took %v, want under %v", took, limit)
			}
		})
	}
}

// TestVerificationBudgetShared: the programs of one object share one
// budget, so an object of many costly programs takes no longer than one:
// the first runs the budget out, the others are refused at once, saying
// why.
func TestVerificationBudgetShared(t *testing.T) {
	insns, err := asm.Assemble(advDeep(20, 7))
	if err != nil {
		t.Fatal(err)
	}
	units := make([]verifier.Unit, 8)
	for i := range units {
		units[i] = verifier.Unit{Insns: insns, Config: verifier.Config{Hook: hook.Get("vtest"), MaxStack: 8 * 512}}
	}
	start := time.Now()
	_, errs, _ := verifier.VerifyTogether(asmMaps, units)
	took := time.Since(start)
	for i, err := range errs {
		var ve *verifier.Error
		if !errors.As(err, &ve) || ve.Code != verifier.Complexity {
			t.Fatalf("program %d: %v, want E026", i, err)
		}
		if i > 0 && !strings.Contains(ve.Msg, "no verification budget left") {
			t.Errorf("program %d: %q, want the budget spent by the programs before", i, ve.Msg)
		}
	}
	t.Logf("8 programs: %v", took)
	if took > time.Second {
		t.Errorf("8 programs took %v, want under 1 s (one budget for all)", took)
	}
}

// TestVerificationBudgetSpent: Result.Steps reports the work, and a
// program needing more than Complexity steps is refused.
func TestVerificationBudgetSpent(t *testing.T) {
	insns, err := asm.Assemble(advLadder(200))
	if err != nil {
		t.Fatal(err)
	}
	cfg := verifier.Config{Hook: hook.Get("vtest"), Maps: asmMaps}
	r, err := cfg.Verify(insns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps < r.Visits {
		t.Fatalf("steps %d < visits %d", r.Steps, r.Visits)
	}
	cfg.Complexity = r.Steps - 1
	if _, err := cfg.Verify(insns, nil); err == nil {
		t.Fatalf("accepted with a budget of %d steps, one less than it needs", cfg.Complexity)
	}
	cfg.Complexity = r.Steps
	if _, err := cfg.Verify(insns, nil); err != nil {
		t.Fatalf("refused with the budget it needs: %v", err)
	}
}

// BenchmarkVerifyAdversaries measures the costliest programs of
// TestVerificationTimeBounded: the time a verification can take at most,
// whatever the program (BENCHMARKS.md, "Verification time bound").
func BenchmarkVerifyAdversaries(b *testing.B) {
	for _, bc := range []struct{ name, src string }{
		{"counter", advCounter()},
		{"loop_states_20", advLoopStates(20)},
		{"deep_20_frames_7", advDeep(20, 7)},
		{"local_branches_5000", advCtl(5000, 8)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			insns, err := asm.Assemble(bc.src)
			if err != nil {
				b.Fatal(err)
			}
			h := hook.Get("vtest")
			if strings.HasPrefix(bc.name, "local") {
				h = hook.Get(hook.Tuner)
			}
			cfg := verifier.Config{Hook: h, Maps: asmMaps, MaxStack: 8 * 512}
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				if _, err := cfg.Verify(insns, nil); err == nil {
					b.Fatal("accepted")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

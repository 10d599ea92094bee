package enginetest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// ringRecords drains m and returns its records as pairs of words.
func ringRecords(t *testing.T, m *maps.Map) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	_, err := m.ReadRing(func(rec []byte) bool {
		if len(rec) != 16 {
			t.Errorf("ring record of %d bytes, want 16", len(rec))
			return true
		}
		out = append(out, [2]uint64{le.Uint64(rec), le.Uint64(rec[8:])})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wantRecords(t *testing.T, what string, got [][2]uint64, want ...[2]uint64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: ring records %v, want %v", what, got, want)
	}
}

func TestRingBuf(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		m := newMap(t, maps.Spec{Name: "ring", Type: maps.RingBuf, MaxEntries: 4096})
		output := program(t, e, progRingOutput, m)
		reserve := program(t, e, progRingReserve, m)
		big := program(t, e, progRingBig, m)

		// bpf_ringbuf_output: flags 0 and the wakeup flags are accepted.
		expect(t, "output flags 0", run(t, output, Ctx{Key: 1, Val: 10}), 0)
		expect(t, "output BPF_RB_NO_WAKEUP", run(t, output, Ctx{Key: 2, Val: 20, Flags: 1}), 0)
		expect(t, "output BPF_RB_FORCE_WAKEUP", run(t, output, Ctx{Key: 3, Val: 30, Flags: 2}), 0)
		expect(t, "output flags 4", run(t, output, Ctx{Key: 4, Val: 40, Flags: 4}), eINVAL)
		wantRecords(t, "output", ringRecords(t, m), [2]uint64{1, 10}, [2]uint64{2, 20}, [2]uint64{3, 30})

		// reserve + submit / discard, in order; a discarded record is
		// never seen; reserve with flags != 0 or too large fails.
		expect(t, "reserve+submit 5", run(t, reserve, Ctx{Key: 5, Val: 50}), 0)
		expect(t, "reserve+discard 6", run(t, reserve, Ctx{Key: 6, Val: 60, Out: 1}), 0)
		expect(t, "reserve+submit 7", run(t, reserve, Ctx{Key: 7, Val: 70}), 0)
		expect(t, "reserve flags 1", run(t, reserve, Ctx{Key: 8, Val: 80, Flags: 1}), ^uint64(0))
		expect(t, "reserve 8192 bytes in a 4096-byte ring", run(t, big, Ctx{}), ^uint64(0))
		wantRecords(t, "reserve", ringRecords(t, m), [2]uint64{5, 50}, [2]uint64{7, 70})
		if p := m.RingPending(); p != 0 {
			t.Errorf("%d bytes pending after draining", p)
		}

		// Full ring: 16-byte records take 8+16 bytes; 4096/24 fit.
		fit := 4096 / 24
		for i := 0; i < fit; i++ {
			if r0 := run(t, output, Ctx{Key: uint64(i), Val: 1}); r0 != 0 {
				t.Fatalf("output %d of %d: r0 = %s", i, fit, errName(r0))
			}
		}
		expect(t, "output into a full ring", run(t, output, Ctx{Key: 999}), eAGAIN)
		expect(t, "reserve in a full ring", run(t, reserve, Ctx{Key: 999}), ^uint64(0))
		recs := ringRecords(t, m)
		if len(recs) != fit || recs[0][0] != 0 || recs[fit-1][0] != uint64(fit-1) {
			t.Errorf("full ring gave %d records (first %v), want %d in order", len(recs), recs[:min(1, len(recs))], fit)
		}
		expect(t, "output after draining", run(t, output, Ctx{Key: 1000, Val: 1}), 0)
		wantRecords(t, "after draining", ringRecords(t, m), [2]uint64{1000, 1})
	})
}

func monotonicNs(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

func TestKtimeGetNs(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		x := program(t, e, progKtime)
		before := monotonicNs(t)
		t1, c := runCtx(t, x, Ctx{})
		after := monotonicNs(t)
		if t1 < before || c.Out < t1 || c.Out > after {
			t.Errorf("ktime: before %d <= t1 %d <= t2 %d <= after %d does not hold", before, t1, c.Out, after)
		}
	})
}

func TestGetPrandomU32(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		x := program(t, e, progPrandom)
		const n = 4000
		seen := map[uint64]bool{}
		var ones [32]int
		for i := 0; i < n; i++ {
			r := run(t, x, Ctx{})
			if r>>32 != 0 {
				t.Fatalf("bpf_get_prandom_u32 = %#x: more than 32 bits", r)
			}
			seen[r] = true
			for b := 0; b < 32; b++ {
				ones[b] += int(r >> b & 1)
			}
		}
		if len(seen) < n-2 {
			t.Errorf("%d distinct values in %d calls", len(seen), n)
		}
		// Each bit is set in about half the values (binomial sd ~32).
		for b, c := range ones {
			if c < n/2-250 || c > n/2+250 {
				t.Errorf("bit %d set in %d of %d values", b, c, n)
			}
		}
	})
}

// capturePrintk captures bpf_printk lines without a rate limit for the
// test, and restores stderr and the default rate afterwards.
func capturePrintk(t *testing.T) {
	maps.CapturePrintk(true)
	maps.SetPrintkRate(0, 0)
	maps.DrainPrintk()
	t.Cleanup(func() {
		maps.DrainPrintk()
		maps.CapturePrintk(false)
		maps.SetPrintkRate(20, 40)
	})
}

func TestTracePrintk(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		capturePrintk(t)
		x := program(t, e, printkProg("k=%d v=%u x=%x\n"))
		r0 := run(t, x, Ctx{Key: uint64(1<<64 - 5), Val: 7, Flags: 255})
		want := "k=-5 v=7 x=ff"
		if got := maps.DrainPrintk(); len(got) != 1 || got[0] != want {
			t.Errorf("printk lines %q, want [%q]", got, want)
		}
		expect(t, "bpf_trace_printk (bytes written)", r0, uint64(len(want)+1))

		// Formats the helper refuses: nothing is printed, -EINVAL.
		for _, f := range []string{"s=%s\n", "p=%p\n", "%d %d %d %d\n"} {
			x := program(t, e, printkProg(f))
			expect(t, fmt.Sprintf("format %q", f), run(t, x, Ctx{}), eINVAL)
			if got := maps.DrainPrintk(); len(got) != 0 {
				t.Errorf("format %q printed %q", f, got)
			}
		}

		// The rate limit: a burst of 3, then drops, counted.
		maps.SetPrintkRate(1, 3)
		dropped := maps.PrintkDropped()
		for i := 0; i < 10; i++ {
			run(t, x, Ctx{Key: uint64(i)})
		}
		got := maps.DrainPrintk()
		if len(got) != 3 || !strings.HasPrefix(got[0], "k=0 ") || !strings.HasPrefix(got[2], "k=2 ") {
			t.Errorf("rate 1/s burst 3: lines %q, want k=0..k=2", got)
		}
		if d := maps.PrintkDropped() - dropped; d != 7 {
			t.Errorf("rate 1/s burst 3: %d lines dropped, want 7", d)
		}
		// The next line that passes is preceded by a note of the drops.
		maps.SetPrintkRate(0, 0)
		run(t, x, Ctx{Key: 10})
		got = maps.DrainPrintk()
		if len(got) != 2 || got[0] != "7 bpf_printk lines dropped by the rate limit" || !strings.HasPrefix(got[1], "k=10 ") {
			t.Errorf("after the drops: lines %q, want the drop note then k=10", got)
		}
	})
}

func TestAtomicAddsGoroutines(t *testing.T) {
	for _, e := range engines() {
		iters := 100000
		if e.Name() == "interp" {
			iters = 20000
		}
		if testing.Short() {
			iters /= 10
		}
		t.Run(e.Name(), func(t *testing.T) { atomicGoroutines(t, e, 8, iters) })
	}
}

// atomicMaps are the three maps of progAtomics.
func atomicMaps(t *testing.T) (arr, hash, pcpu *maps.Map) {
	arr = newMap(t, maps.Spec{Name: "arr", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 2})
	hash = newMap(t, maps.Spec{Name: "hash", Type: maps.Hash, KeySize: 8, ValueSize: 16, MaxEntries: 4})
	pcpu = newMap(t, maps.Spec{Name: "pcpu", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: 2})
	if err := hash.Update(u64(0), val16(0, 0), maps.UpdateNoExist); err != nil {
		t.Fatal(err)
	}
	return
}

// checkAtomicMaps checks the maps after n runs of progAtomics whose
// ctx.val summed to valSum.
func checkAtomicMaps(t *testing.T, arr, hash, pcpu *maps.Map, n, valSum uint64) {
	t.Helper()
	wantGo(t, arr, u32(0), n, 0)
	wantGo(t, hash, u64(0), n, valSum)
	v, err := pcpu.Lookup(u32(0))
	if err != nil {
		t.Fatal(err)
	}
	stride := pcpu.ValueBufSize() / maps.PerCPUSlots
	var sum uint64
	for s := 0; s < maps.PerCPUSlots; s++ {
		sum += le.Uint64(v[s*stride:])
	}
	if sum != n {
		t.Errorf("per-CPU value summed over slots = %d, want %d", sum, n)
	}
}

func atomicGoroutines(t *testing.T, e vm.Engine, gs, iters int) {
	arr, hash, pcpu := atomicMaps(t)
	x := program(t, e, progAtomics, arr, hash, pcpu)
	olds := make([][]uint64, gs)
	errs := make(chan error, gs)
	for g := 0; g < gs; g++ {
		go func() {
			lockedRun(func() {
				b := make([]byte, CtxSize)
				le.PutUint64(b[8:], uint64(g+1))
				for i := 0; i < iters; i++ {
					r0, err := x.Run(b)
					if err == nil && (r0 == ^uint64(0) || r0 != le.Uint64(b[24:])) {
						err = fmt.Errorf("goroutine %d run %d: r0 %s, ctx.out %d", g, i, errName(r0), le.Uint64(b[24:]))
					}
					if err != nil {
						errs <- err
						return
					}
					olds[g] = append(olds[g], r0)
				}
				errs <- nil
			})
		}()
	}
	for g := 0; g < gs; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	n := uint64(gs * iters)
	checkAtomicMaps(t, arr, hash, pcpu, n, uint64(iters*gs*(gs+1)/2))
	// Every fetch-add returned a distinct old value: together 0..n-1.
	seen := make([]bool, n)
	for g := range olds {
		for _, o := range olds[g] {
			if o >= n || seen[o] {
				t.Fatalf("fetch-add returned %d twice or out of range (n = %d): an update was lost", o, n)
			}
			seen[o] = true
		}
	}
}

// TestAtomicAddsNativeThreads runs the JIT code on native pthreads that
// call its entry point directly (no Go on the path), as NCCL's threads do.
func TestAtomicAddsNativeThreads(t *testing.T) {
	arr, hash, pcpu := atomicMaps(t)
	for _, e := range engines() {
		if e.Name() != "jit" {
			continue
		}
		x := program(t, e, progAtomics, arr, hash, pcpu)
		nx, ok := x.(vm.NativeExecutable)
		if !ok {
			t.Fatalf("the JIT's executable is not a vm.NativeExecutable")
		}
		const threads = 8
		iters := uint64(500000)
		if testing.Short() {
			iters /= 10
		}
		sum, err := Threads(nx.Entry(), threads, iters)
		if err != nil {
			t.Fatal(err)
		}
		n := threads * iters
		// Thread i passes ctx.val = 0..iters-1.
		checkAtomicMaps(t, arr, hash, pcpu, n, threads*(iters*(iters-1)/2))
		// r0 is the old value of each fetch-add: if they were all distinct
		// they sum to 0+1+...+(n-1).
		if want := n * (n - 1) / 2; sum != want {
			t.Errorf("sum of fetch-add results %d, want %d", sum, want)
		}
	}
}

// lockedRun runs fn with the goroutine locked to its OS thread.
func lockedRun(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fn()
}

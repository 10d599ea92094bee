package enginetest

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// progCAS increments value[1] of array map(0)[0] with a compare-and-swap
// loop (at most 1000 attempts; r0 = -2 when all failed) and then adds 1 to
// the low 32 bits of value[0] with a 32-bit atomic add; r0 = the number of
// failed attempts (-1 when the lookup fails).
const progCAS = `
	mov %r1, 0
	stxdw [%r10-8], %r1
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	call 1
	jeq %r0, 0, fail
	mov %r7, %r0
	mov %r8, 0
retry:
	ldxdw %r0, [%r7+8]
	mov %r9, %r0
	mov %r1, %r0
	add %r1, 1
	lock cmpxchg [%r7+8], %r1
	jeq %r0, %r9, done
	add %r8, 1
	jlt %r8, 1000, retry
	mov %r0, -2
	exit
done:
	mov %r1, 1
	lock add32 [%r7+0], %r1
	mov %r0, %r8
	exit
fail:
	mov %r0, -1
	exit
`

// TestAtomicCmpXchg: a compare-and-swap counter and 32-bit atomic adds on
// a map value from 8 goroutines on both engines, and from 8 native threads
// on the JIT: no increment is lost.
func TestAtomicCmpXchg(t *testing.T) {
	const gs = 8
	onEngines(t, func(t *testing.T, e vm.Engine) {
		iters := 50000
		if e.Name() == "interp" {
			iters = 10000
		}
		if testing.Short() {
			iters /= 10
		}
		m := newMap(t, maps.Spec{Name: "cas", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1})
		x := program(t, e, progCAS, m)
		errs := make(chan error, gs)
		retries := make([]uint64, gs)
		for g := 0; g < gs; g++ {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for i := 0; i < iters; i++ {
					r0, err := x.Run(make([]byte, CtxSize))
					if err == nil && int64(r0) < 0 {
						err = fmt.Errorf("goroutine %d run %d: r0 %s", g, i, errName(r0))
					}
					if err != nil {
						errs <- err
						return
					}
					retries[g] += r0
				}
				errs <- nil
			}()
		}
		for g := 0; g < gs; g++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		n := uint64(gs * iters)
		wantGo(t, m, u32(0), n, n)
		var r uint64
		for _, v := range retries {
			r += v
		}
		t.Logf("%s: %d increments, %d failed compare-and-swap attempts", e.Name(), n, r)

		nx, ok := x.(vm.NativeExecutable)
		if !ok {
			return
		}
		if err := m.Update(u32(0), val16(0, 0), maps.UpdateAny); err != nil {
			t.Fatal(err)
		}
		per := uint64(10 * iters)
		if _, err := Threads(nx.Entry(), gs, per); err != nil {
			t.Fatal(err)
		}
		wantGo(t, m, u32(0), gs*per, gs*per)
	})
}

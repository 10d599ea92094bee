package enginetest

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// progLRUInsert: r0 = bpf_map_update_elem(map(0), &key, &{ctx.val, key},
// BPF_NOEXIST) with key = ctx.key << 32 | ctx.val (a new key every call
// of every thread).
const progLRUInsert = `
	ldxdw %r2, [%r1+0]
	lsh %r2, 32
	ldxdw %r3, [%r1+8]
	or %r2, %r3
	stxdw [%r10-8], %r2
	stxdw [%r10-24], %r3
	stxdw [%r10-16], %r2
	lddw %r1, map(0)
	mov %r2, %r10
	add %r2, -8
	mov %r3, %r10
	add %r3, -24
	mov %r4, 1
	call 2
	exit
`

// TestLRUInsertThreads: native threads insert new keys into small LRU maps
// at once; an LRU insert must always succeed (it evicts), and the map ends
// full with keys that were inserted.
func TestLRUInsertThreads(t *testing.T) {
	for _, max := range []uint32{1, 4, 64, 1024} {
		m := newMap(t, maps.Spec{Name: "lru", Type: maps.LRUHash, KeySize: 8, ValueSize: 16, MaxEntries: max})
		x := program(t, native.New(), progLRUInsert, m)
		iters := uint64(30000)
		if testing.Short() {
			iters /= 10
		}
		const threads = 8
		sum, err := Threads(x.(vm.NativeExecutable).Entry(), threads, iters)
		if err != nil {
			t.Fatal(err)
		}
		if sum != 0 {
			t.Errorf("max_entries %d: %d threads x %d NOEXIST inserts of new keys: sum of results %s, want 0 (every insert succeeds)",
				max, threads, iters, errName(sum))
		}
		n := 0
		if err := m.Iterate(func(k, v []byte) bool {
			n++
			key := le.Uint64(k)
			if key>>32 >= threads || key&0xffffffff >= iters || le.Uint64(v) != key&0xffffffff || le.Uint64(v[8:]) != key {
				t.Errorf("max_entries %d: entry %x = %x was never inserted", max, k, v)
				return false
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if n != int(max) {
			t.Errorf("max_entries %d: %d entries after %d inserts, want the map full", max, n, threads*iters)
		}
	}
}

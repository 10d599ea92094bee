package maps_test

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/maps/internal/ctest"
)

var hammerFlag = flag.Duration("hammer", 0, "run the native hammer test this long (default 1.5s, or $NCCLBPF_HAMMER_SECONDS)")

func hammerDuration(t *testing.T) time.Duration {
	if *hammerFlag > 0 {
		return *hammerFlag
	}
	if s := os.Getenv(envconfig.HammerSeconds); s != "" {
		var sec float64
		if _, err := fmt.Sscan(s, &sec); err != nil || sec <= 0 {
			t.Fatalf("NCCLBPF_HAMMER_SECONDS=%q: want a positive number", s)
		}
		return time.Duration(sec * float64(time.Second))
	}
	if testing.Short() {
		return 300 * time.Millisecond
	}
	return 1500 * time.Millisecond
}

func hammerEnv(t testing.TB, threads int, lruEntries uint32) (*ctest.Env, map[string]*maps.Map) {
	n := uint32(ctest.Shared + threads*ctest.KeysPerThread)
	ms := map[string]*maps.Map{
		"array":  mustNew(t, maps.Spec{Name: "array", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: max(n, 1024)}),
		"hash":   mustNew(t, maps.Spec{Name: "hash", Type: maps.Hash, KeySize: 8, ValueSize: 16, MaxEntries: n}),
		"lru":    mustNew(t, maps.Spec{Name: "lru", Type: maps.LRUHash, KeySize: 8, ValueSize: 16, MaxEntries: lruEntries}),
		"percpu": mustNew(t, maps.Spec{Name: "percpu", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1024}),
		"ring":   mustNew(t, maps.Spec{Name: "ring", Type: maps.RingBuf, MaxEntries: 1 << 16}),
	}
	tab := maps.HelperTable()
	return &ctest.Env{
		Lookup: tab[helpers.MapLookupElem].Addr, Update: tab[helpers.MapUpdateElem].Addr,
		Delete: tab[helpers.MapDeleteElem].Addr, RingOutput: tab[helpers.RingbufOutput].Addr,
		RingReserve: tab[helpers.RingbufReserve].Addr, RingSubmit: tab[helpers.RingbufSubmit].Addr,
		RingDiscard: tab[helpers.RingbufDiscard].Addr, SmpID: tab[helpers.GetSmpProcessorID].Addr,
		Array: ms["array"].Handle(), Hash: ms["hash"].Handle(), LRU: ms["lru"].Handle(),
		PerCPU: ms["percpu"].Handle(), Ring: ms["ring"].Handle(),
	}, ms
}

// TestHammer runs 8 native threads doing mixed lookups, updates, deletes,
// atomic adds and ring buffer output, while Go consumes the ring, then
// checks that the final state is exactly what the operations imply.
func TestHammer(t *testing.T) {
	const threads = 8
	d := hammerDuration(t)
	env, ms := hammerEnv(t, threads, 128)
	for i := 0; i < ctest.Shared; i++ {
		if err := ms["hash"].Update(u64(1000000+uint64(i)), make([]byte, 16), maps.UpdateNoExist); err != nil {
			t.Fatal(err)
		}
	}

	// Ring consumer: each thread's records arrive in order, none missing,
	// no discarded record visible.
	var wg sync.WaitGroup
	done := make(chan struct{})
	next := make([]uint64, threads)
	var ringErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		check := func(r []byte) bool {
			if len(r) != 16 {
				ringErr = fmt.Errorf("record of %d bytes", len(r))
				return false
			}
			th, seq := le.Uint64(r), le.Uint64(r[8:])
			if th >= threads || seq != next[th] {
				ringErr = fmt.Errorf("record thread %d seq %d, want seq %d", th, seq, next[min(th, threads-1)])
				return false
			}
			next[th]++
			return true
		}
		for ringErr == nil {
			select {
			case <-done:
				ms["ring"].ReadRing(check)
				return
			default:
				if n, _ := ms["ring"].ReadRing(check); n == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}
	}()
	start := time.Now()
	res, err := ctest.Hammer(env, threads, uint64(d.Milliseconds()))
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)

	var ops, sent, full, discarded, pcAdds uint64
	var arrAdds, hashAdds [ctest.Shared]uint64
	hashLive := ctest.Shared
	for i, r := range res {
		if r.Errors != 0 {
			t.Errorf("thread %d: %d errors, first: %s", i, r.Errors, r.FirstError)
		}
		ops += r.Ops
		sent += r.RingSent
		full += r.RingFull
		discarded += r.RingDiscarded
		pcAdds += r.PerCPUAdds
		for j := range arrAdds {
			arrAdds[j] += r.ArrayAdds[j]
			hashAdds[j] += r.HashAdds[j]
		}
		for k := 0; k < ctest.KeysPerThread; k++ {
			key := u64(uint64(i+1)<<32 | uint64(k))
			v, err := ms["hash"].Lookup(key)
			if r.HashPresent[k] {
				hashLive++
				if err != nil || le.Uint64(v) != r.HashValue[k] || le.Uint64(v[8:]) != ^r.HashValue[k] {
					t.Errorf("thread %d hash key %d: %x %v, want %d", i, k, v, err, r.HashValue[k])
				}
			} else if err == nil {
				t.Errorf("thread %d hash key %d present, model says deleted", i, k)
			}
			v, err = ms["array"].Lookup(u32(uint32(ctest.Shared + i*ctest.KeysPerThread + k)))
			want0, want1 := r.ArrayValue[k], ^r.ArrayValue[k]
			if want0 == 0 {
				want1 = 0
			}
			if err != nil || le.Uint64(v) != want0 || le.Uint64(v[8:]) != want1 {
				t.Errorf("thread %d array index %d: %x %v, want %d", i, k, v, err, want0)
			}
		}
	}
	for j := 0; j < ctest.Shared; j++ {
		if v, _ := ms["array"].Lookup(u32(uint32(j))); le.Uint64(v) != arrAdds[j] {
			t.Errorf("shared array counter %d = %d, want %d", j, le.Uint64(v), arrAdds[j])
		}
		if v, _ := ms["hash"].Lookup(u64(1000000 + uint64(j))); le.Uint64(v) != hashAdds[j] {
			t.Errorf("shared hash counter %d = %d, want %d", j, le.Uint64(v), hashAdds[j])
		}
	}
	if keys, _ := ms["hash"].Keys(); len(keys) != hashLive {
		t.Errorf("hash holds %d keys, want %d", len(keys), hashLive)
	}
	pc, _ := ms["percpu"].Lookup(u32(0))
	var pcSum uint64
	for s := 0; s < maps.PerCPUSlots; s++ {
		pcSum += le.Uint64(pc[s*8:])
	}
	if pcSum != pcAdds {
		t.Errorf("per-CPU counter sum %d, want %d", pcSum, pcAdds)
	}
	lruKeys := 0
	ms["lru"].Iterate(func(k, v []byte) bool {
		lruKeys++
		if key := le.Uint64(k); le.Uint64(v) != key*7+1 || le.Uint64(v[8:]) != key {
			t.Errorf("LRU key %d holds %x", key, v)
		}
		return true
	})
	// An insert that evicted and then found its key inserted by another
	// thread returns the evicted element to the free list: fewer than 128
	// keys are possible, more are not.
	if lruKeys == 0 || lruKeys > 128 {
		t.Errorf("LRU holds %d keys, want 1..128", lruKeys)
	}
	if ringErr != nil {
		t.Errorf("ring consumer: %v", ringErr)
	}
	var got uint64
	for _, n := range next {
		got += n
	}
	if got != sent {
		t.Errorf("ring: consumed %d records, producers sent %d", got, sent)
	}
	t.Logf("%d threads, %v: %d ops (%.1f M/s); ring %d sent, %d full, %d discarded; LRU keys %d",
		threads, elapsed.Round(time.Millisecond), ops, float64(ops)/elapsed.Seconds()/1e6, sent, full, discarded, lruKeys)
}

// TestHammerLRULarge exercises LRU eviction with windowed scans (more than
// 256 entries) under contention.
func TestHammerLRULarge(t *testing.T) {
	env, ms := hammerEnv(t, 4, 300)
	for i := 0; i < ctest.Shared; i++ {
		ms["hash"].Update(u64(1000000+uint64(i)), make([]byte, 16), maps.UpdateNoExist)
	}
	env.Ring = 0
	res, err := ctest.Hammer(env, 4, 200)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Errors != 0 {
			t.Errorf("thread %d: %d errors, first: %s", i, r.Errors, r.FirstError)
		}
	}
	n := 0
	ms["lru"].Iterate(func(k, v []byte) bool {
		n++
		if key := le.Uint64(k); le.Uint64(v) != key*7+1 {
			t.Errorf("LRU key %d holds %x", key, v)
		}
		return true
	})
	if n == 0 || n > 300 {
		t.Errorf("LRU holds %d keys, want 1..300", n)
	}
}

// TestHashChurn targets the lock-free lookup: the never-deleted keys all
// share one bucket, and churner elements keep leaving that bucket's head for
// other buckets and coming back, reused at once, while readers walk the
// chain. A reader that did not notice the move would follow the element into
// another chain and miss its key.
func TestHashChurn(t *testing.T) {
	for _, tries := range []uint32{64, 1, 0} {
		t.Run(fmt.Sprintf("lockless-tries-%d", tries), func(t *testing.T) {
			old := maps.SetLocklessTries(tries)
			defer maps.SetLocklessTries(old)
			hashChurn(t)
		})
	}
}

// hashChurn is TestHashChurn with the current number of lockless tries (1:
// lookups fall back to the locked walk whenever a writer interferes; 0:
// every lookup walks under the lock).
func hashChurn(t *testing.T) {
	const persistent, churners, readers = 16, 2, 2
	env, _ := hammerEnv(t, 1, 16)
	m := mustNew(t, maps.Spec{Name: "churn", Type: maps.Hash, KeySize: 8, ValueSize: 8, MaxEntries: persistent + churners})
	hot := maps.BucketOf(m, u64(0))
	var persist, churn []uint64
	var other []uint64
	for k := uint64(0); len(persist) < persistent+churners || len(other) < churners; k++ {
		if maps.BucketOf(m, u64(k)) == hot {
			persist = append(persist, k)
		} else if len(other) < churners {
			other = append(other, k)
		}
	}
	// Churner i moves between a key in the hot bucket and one elsewhere.
	for i := 0; i < churners; i++ {
		churn = append(churn, persist[persistent+i], other[i])
	}
	persist = persist[:persistent]
	for _, k := range persist {
		if err := m.Update(u64(k), u64(k), maps.UpdateNoExist); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < churners; i++ {
		if err := m.Update(u64(churn[2*i]), u64(0), maps.UpdateNoExist); err != nil {
			t.Fatal(err)
		}
	}
	d := hammerDuration(t) / 2
	bad, lookups := ctest.Churn(env, m.Handle(), persist, churn, readers, uint64(d.Milliseconds()))
	if bad != 0 {
		t.Errorf("%d of %d lookups of never-deleted keys failed", bad, lookups)
	}
	if keys, _ := m.Keys(); len(keys) != persistent+churners {
		t.Errorf("map holds %d keys, want %d", len(keys), persistent+churners)
	}
	t.Logf("%d lookups during churn", lookups)
}

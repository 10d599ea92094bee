package enginetest

import (
	"runtime"
	"sort"
	"testing"

	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Flags of bpf_map_update_elem.
const (
	fAny     = uint64(maps.UpdateAny)
	fNoExist = uint64(maps.UpdateNoExist)
	fExist   = uint64(maps.UpdateExist)
)

// mapProgs are the lookup/update/delete/write programs on one map.
type mapProgs struct {
	lookup, update, del, write vm.Executable
}

func newMapProgs(t *testing.T, e vm.Engine, m *maps.Map) mapProgs {
	return mapProgs{
		lookup: program(t, e, progLookup, m),
		update: program(t, e, progUpdate, m),
		del:    program(t, e, progDelete, m),
		write:  program(t, e, progWrite, m),
	}
}

func (p mapProgs) Update(t *testing.T, key, val, flags uint64) uint64 {
	t.Helper()
	return run(t, p.update, Ctx{Key: key, Val: val, Flags: flags})
}

func (p mapProgs) Delete(t *testing.T, key uint64) uint64 {
	t.Helper()
	return run(t, p.del, Ctx{Key: key})
}

// Lookup returns value[0] and value[1] of key as the program sees them, ok
// = false when the lookup returned NULL.
func (p mapProgs) Lookup(t *testing.T, key uint64) (v0, v1 uint64, ok bool) {
	t.Helper()
	r0, c := runCtx(t, p.lookup, Ctx{Key: key, Out: 0xdead})
	if r0 == ^uint64(0) {
		if c.Out != 0xdead {
			t.Errorf("lookup of %d returned NULL but wrote ctx.out", key)
		}
		return 0, 0, false
	}
	return r0, c.Out, true
}

// wantGo checks a 16-byte value of key through the Go API.
func wantGo(t *testing.T, m *maps.Map, key []byte, want0, want1 uint64) {
	t.Helper()
	a, b, ok := lookup16(t, m, key)
	if !ok || a != want0 || b != want1 {
		t.Errorf("Go lookup %x: {%d, %d} present=%v, want {%d, %d}", key, a, b, ok, want0, want1)
	}
}

func wantGoMissing(t *testing.T, m *maps.Map, key []byte) {
	t.Helper()
	if v, err := m.Lookup(key); err == nil {
		t.Errorf("Go lookup %x: %x, want the key missing", key, v)
	}
}

func TestArray(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		m := newMap(t, maps.Spec{Name: "arr", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 8})
		p := newMapProgs(t, e, m)

		// Every index exists from the start, zeroed.
		if v0, v1, ok := p.Lookup(t, 7); !ok || v0 != 0 || v1 != 0 {
			t.Errorf("fresh array[7] = {%d, %d} ok=%v, want zero", v0, v1, ok)
		}
		expect(t, "update 3 ANY", p.Update(t, 3, 7, fAny), 0)
		wantGo(t, m, u32(3), 7, 3)
		expect(t, "update 3 EXIST", p.Update(t, 3, 8, fExist), 0)
		wantGo(t, m, u32(3), 8, 3)
		expect(t, "update 3 NOEXIST (always exists)", p.Update(t, 3, 9, fNoExist), eEXIST)
		wantGo(t, m, u32(3), 8, 3)
		expect(t, "update 8 (max_entries 8)", p.Update(t, 8, 1, fAny), eE2BIG)
		expect(t, "update 0xffffffff", p.Update(t, 0xffffffff, 1, fAny), eE2BIG)
		expect(t, "update flags 3", p.Update(t, 3, 10, 3), eINVAL)
		expect(t, "update flags 1<<32", p.Update(t, 3, 10, 1<<32), eINVAL)
		wantGo(t, m, u32(3), 8, 3)

		if v0, v1, ok := p.Lookup(t, 3); !ok || v0 != 8 || v1 != 3 {
			t.Errorf("program lookup 3 = {%d, %d} ok=%v, want {8, 3}", v0, v1, ok)
		}
		// The key is 4 bytes: the high half of ctx.key is not part of it.
		if v0, _, ok := p.Lookup(t, 1<<32|3); !ok || v0 != 8 {
			t.Errorf("program lookup 1<<32|3 = %d ok=%v, want index 3's value 8", v0, ok)
		}
		if _, _, ok := p.Lookup(t, 8); ok {
			t.Errorf("program lookup 8 (out of range) did not return NULL")
		}
		expect(t, "delete 3", p.Delete(t, 3), eINVAL)
		expect(t, "delete 8", p.Delete(t, 8), eINVAL)
		wantGo(t, m, u32(3), 8, 3)

		// Writes through the looked-up pointer reach Go; Go's reach programs.
		expect(t, "write 5", run(t, p.write, Ctx{Key: 5, Val: 55}), 0)
		expect(t, "write 5", run(t, p.write, Ctx{Key: 5, Val: 56}), 0)
		wantGo(t, m, u32(5), 56, 2)
		expect(t, "write 8", run(t, p.write, Ctx{Key: 8, Val: 1}), ^uint64(0))
		if err := m.Update(u32(6), val16(42, 43), maps.UpdateAny); err != nil {
			t.Fatal(err)
		}
		if v0, v1, ok := p.Lookup(t, 6); !ok || v0 != 42 || v1 != 43 {
			t.Errorf("program lookup 6 after a Go update = {%d, %d} ok=%v, want {42, 43}", v0, v1, ok)
		}
	})
}

// keysOf returns the map's 8-byte keys, sorted.
func keysOf(t *testing.T, m *maps.Map) []uint64 {
	t.Helper()
	ks, err := m.Keys()
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, k := range ks {
		out = append(out, le.Uint64(k))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func wantKeys(t *testing.T, m *maps.Map, want ...uint64) {
	t.Helper()
	got := keysOf(t, m)
	if len(got) != len(want) {
		t.Errorf("keys %v, want %v", got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("keys %v, want %v", got, want)
			return
		}
	}
}

func TestHash(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		m := newMap(t, maps.Spec{Name: "hash", Type: maps.Hash, KeySize: 8, ValueSize: 16, MaxEntries: 4})
		p := newMapProgs(t, e, m)

		if _, _, ok := p.Lookup(t, 1); ok {
			t.Errorf("lookup in an empty hash did not return NULL")
		}
		expect(t, "delete missing 1", p.Delete(t, 1), eNOENT)
		expect(t, "update EXIST missing 1", p.Update(t, 1, 10, fExist), eNOENT)
		wantKeys(t, m)
		expect(t, "update NOEXIST 1", p.Update(t, 1, 10, fNoExist), 0)
		expect(t, "update NOEXIST 1 again", p.Update(t, 1, 11, fNoExist), eEXIST)
		wantGo(t, m, u64(1), 10, 1)
		expect(t, "update EXIST 1", p.Update(t, 1, 12, fExist), 0)
		wantGo(t, m, u64(1), 12, 1)
		expect(t, "update flags 3", p.Update(t, 1, 13, 3), eINVAL)
		expect(t, "update flags 4 on a missing key", p.Update(t, 9, 13, 4), eINVAL)
		wantGo(t, m, u64(1), 12, 1)
		wantKeys(t, m, 1)

		for k := uint64(2); k <= 4; k++ {
			expect(t, "update ANY (filling)", p.Update(t, k, 10*k, fAny), 0)
		}
		wantKeys(t, m, 1, 2, 3, 4)
		// Full: new keys are refused whatever the flag; existing keys
		// can still be replaced.
		expect(t, "update ANY 5 into a full map", p.Update(t, 5, 50, fAny), eE2BIG)
		expect(t, "update NOEXIST 5 into a full map", p.Update(t, 5, 50, fNoExist), eE2BIG)
		expect(t, "update EXIST 5 into a full map", p.Update(t, 5, 50, fExist), eNOENT)
		expect(t, "update ANY 1 in a full map", p.Update(t, 1, 14, fAny), 0)
		expect(t, "update NOEXIST 2 in a full map", p.Update(t, 2, 14, fNoExist), eEXIST)
		wantKeys(t, m, 1, 2, 3, 4)
		wantGo(t, m, u64(1), 14, 1)
		wantGo(t, m, u64(2), 20, 2)

		expect(t, "delete 2", p.Delete(t, 2), 0)
		expect(t, "delete 2 again", p.Delete(t, 2), eNOENT)
		wantGoMissing(t, m, u64(2))
		if _, _, ok := p.Lookup(t, 2); ok {
			t.Errorf("lookup of a deleted key did not return NULL")
		}
		expect(t, "update ANY 5 after a delete", p.Update(t, 5, 50, fAny), 0)
		wantKeys(t, m, 1, 3, 4, 5)
		if v0, v1, ok := p.Lookup(t, 5); !ok || v0 != 50 || v1 != 5 {
			t.Errorf("program lookup 5 = {%d, %d} ok=%v, want {50, 5}", v0, v1, ok)
		}

		expect(t, "write 3", run(t, p.write, Ctx{Key: 3, Val: 33}), 0)
		wantGo(t, m, u64(3), 33, 4) // value[1] was 3 (the key), +1
		expect(t, "write 2 (missing)", run(t, p.write, Ctx{Key: 2, Val: 1}), ^uint64(0))
		wantGoMissing(t, m, u64(2))

		// Go deletes and inserts are seen by programs.
		if err := m.Delete(u64(3)); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := p.Lookup(t, 3); ok {
			t.Errorf("program lookup of a key deleted from Go did not return NULL")
		}
		if err := m.Update(u64(7), val16(70, 71), maps.UpdateNoExist); err != nil {
			t.Fatal(err)
		}
		if v0, v1, ok := p.Lookup(t, 7); !ok || v0 != 70 || v1 != 71 {
			t.Errorf("program lookup 7 after a Go insert = {%d, %d} ok=%v, want {70, 71}", v0, v1, ok)
		}
	})
}

func TestLRUHash(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		m := newMap(t, maps.Spec{Name: "lru", Type: maps.LRUHash, KeySize: 8, ValueSize: 16, MaxEntries: 4})
		p := newMapProgs(t, e, m)

		expect(t, "update EXIST missing", p.Update(t, 1, 1, fExist), eNOENT)
		for k := uint64(1); k <= 4; k++ {
			expect(t, "update NOEXIST (filling)", p.Update(t, k, 10*k, fNoExist), 0)
		}
		// Use order is now 1 2 3 4; a program lookup of 1 makes 2 the
		// least recently used, which the next insert evicts.
		if v0, _, ok := p.Lookup(t, 1); !ok || v0 != 10 {
			t.Fatalf("lookup 1 = %d ok=%v", v0, ok)
		}
		expect(t, "update ANY 5 (evicts 2)", p.Update(t, 5, 50, fAny), 0)
		wantKeys(t, m, 1, 3, 4, 5)
		// An update counts as a use too: 3 is refreshed, 4 goes next.
		expect(t, "update EXIST 3", p.Update(t, 3, 31, fExist), 0)
		expect(t, "update NOEXIST 6 (evicts 4)", p.Update(t, 6, 60, fNoExist), 0)
		wantKeys(t, m, 1, 3, 5, 6)
		wantGo(t, m, u64(3), 31, 3)
		wantGo(t, m, u64(6), 60, 6)

		expect(t, "update NOEXIST existing 1", p.Update(t, 1, 0, fNoExist), eEXIST)
		expect(t, "update EXIST missing 4", p.Update(t, 4, 0, fExist), eNOENT)
		expect(t, "update flags 7", p.Update(t, 7, 0, 7), eINVAL)
		wantKeys(t, m, 1, 3, 5, 6)
		expect(t, "delete 5", p.Delete(t, 5), 0)
		expect(t, "delete 5 again", p.Delete(t, 5), eNOENT)
		if _, _, ok := p.Lookup(t, 5); ok {
			t.Errorf("lookup of a deleted key did not return NULL")
		}
		// With a free element, an insert evicts nothing.
		expect(t, "update ANY 8 (free element)", p.Update(t, 8, 80, fAny), 0)
		wantKeys(t, m, 1, 3, 6, 8)
		expect(t, "write 8", run(t, p.write, Ctx{Key: 8, Val: 81}), 0)
		wantGo(t, m, u64(8), 81, 9)
		// Go lookups do not count as uses (as in Linux): after program
		// lookups of 3, 6 and 8, key 1 is the oldest even though Go just
		// read it, and the next insert evicts it.
		for _, k := range []uint64{3, 6, 8} {
			if _, _, ok := p.Lookup(t, k); !ok {
				t.Fatalf("lookup %d: missing", k)
			}
		}
		wantGo(t, m, u64(1), 10, 1)
		expect(t, "update ANY 9 (evicts 1)", p.Update(t, 9, 90, fAny), 0)
		wantKeys(t, m, 3, 6, 8, 9)
	})
}

func TestPerCPUArray(t *testing.T) {
	onEngines(t, func(t *testing.T, e vm.Engine) {
		lockThread(t)
		m := newMap(t, maps.Spec{Name: "pcpu", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: 4})
		p := newMapProgs(t, e, m)
		add := program(t, e, progPerCPU, m)
		stride := m.ValueBufSize() / maps.PerCPUSlots

		slots := func(key uint32) [][2]uint64 {
			t.Helper()
			v, err := m.Lookup(u32(key))
			if err != nil {
				t.Fatal(err)
			}
			out := make([][2]uint64, maps.PerCPUSlots)
			for s := range out {
				out[s] = [2]uint64{le.Uint64(v[s*stride:]), le.Uint64(v[s*stride+8:])}
			}
			return out
		}

		r0, c := runCtx(t, add, Ctx{Key: 2, Val: 5})
		slot := maps.ThisSlot()
		if c.Out != uint64(slot) {
			t.Fatalf("bpf_get_smp_processor_id = %d, this thread's slot is %d", c.Out, slot)
		}
		expect(t, "per-CPU add", r0, 5)
		expect(t, "per-CPU add", run(t, add, Ctx{Key: 2, Val: 6}), 11)
		for s, v := range slots(2) {
			want := uint64(0)
			if s == int(slot) {
				want = 11
			}
			if v[0] != want {
				t.Errorf("slot %d of key 2 = %d, want %d", s, v[0], want)
			}
		}
		// A program update writes this thread's slot only.
		expect(t, "update 1 ANY", p.Update(t, 1, 7, fAny), 0)
		for s, v := range slots(1) {
			want := [2]uint64{}
			if s == int(slot) {
				want = [2]uint64{7, 1}
			}
			if v != want {
				t.Errorf("slot %d of key 1 = %v, want %v", s, v, want)
			}
		}
		expect(t, "update 1 EXIST", p.Update(t, 1, 8, fExist), 0)
		expect(t, "update 1 NOEXIST", p.Update(t, 1, 9, fNoExist), eEXIST)
		expect(t, "update 4 (max_entries 4)", p.Update(t, 4, 9, fAny), eE2BIG)
		expect(t, "update flags 3", p.Update(t, 1, 9, 3), eINVAL)
		expect(t, "delete 1", p.Delete(t, 1), eINVAL)
		if v0, v1, ok := p.Lookup(t, 1); !ok || v0 != 8 || v1 != 1 {
			t.Errorf("program lookup 1 = {%d, %d} ok=%v, want {8, 1}", v0, v1, ok)
		}
		if _, _, ok := p.Lookup(t, 4); ok {
			t.Errorf("program lookup 4 (out of range) did not return NULL")
		}
		// A Go update of one value fills every slot.
		if err := m.Update(u32(3), val16(30, 31), maps.UpdateAny); err != nil {
			t.Fatal(err)
		}
		if v0, v1, ok := p.Lookup(t, 3); !ok || v0 != 30 || v1 != 31 {
			t.Errorf("program lookup 3 after a Go update = {%d, %d} ok=%v, want {30, 31}", v0, v1, ok)
		}

		// Another OS thread has another slot and sees its own copy.
		type res struct {
			slot, out, r0 uint64
		}
		ch := make(chan res)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b := Ctx{Key: 2, Val: 100}.Bytes()
			r0, err := add.Run(b)
			if err != nil {
				r0 = 1<<64 - 2
			}
			ch <- res{uint64(maps.ThisSlot()), le.Uint64(b[24:]), r0}
		}()
		o := <-ch
		if o.slot == uint64(slot) {
			t.Skipf("two OS threads share slot %d (more than %d threads used helpers)", slot, maps.PerCPUSlots)
		}
		if o.out != o.slot || o.r0 != 100 {
			t.Errorf("second thread: smp id %d, slot %d, r0 %d; want r0 100 from its own zeroed copy", o.out, o.slot, o.r0)
		}
		sv := slots(2)
		if sv[slot][0] != 11 || sv[o.slot][0] != 100 {
			t.Errorf("key 2: slot %d = %d (want 11), slot %d = %d (want 100)", slot, sv[slot][0], o.slot, sv[o.slot][0])
		}
	})
}

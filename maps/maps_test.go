package maps_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"syscall"
	"testing"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/ncclbpf/ncclbpf/maps/internal/ctest"
)

var le = binary.LittleEndian

func addr(id helpers.ID) uintptr { return maps.HelperTable()[id].Addr }

// neg is the helper result for -errno.
func neg(e syscall.Errno) uint64 { return uint64(-int64(e)) }

func u32(v uint32) []byte { return le.AppendUint32(nil, v) }
func u64(v uint64) []byte { return le.AppendUint64(nil, v) }

func mustNew(t testing.TB, s maps.Spec) *maps.Map {
	t.Helper()
	m, err := maps.New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// helper calls a helper through its native function pointer with C copies
// of the byte-slice arguments (nil: 0).
type caller struct {
	t    *testing.T
	mems []*ctest.Mem
}

func newCaller(t *testing.T) *caller {
	c := &caller{t: t}
	t.Cleanup(func() {
		for _, m := range c.mems {
			m.Free()
		}
	})
	return c
}

func (c *caller) mem(b []byte) uint64 {
	if b == nil {
		return 0
	}
	m := ctest.Alloc(len(b), b)
	c.mems = append(c.mems, m)
	return m.Addr
}

func (c *caller) lookup(m *maps.Map, key []byte) uint64 {
	return ctest.Call(addr(helpers.MapLookupElem), uint64(m.Handle()), c.mem(key), 0, 0, 0)
}
func (c *caller) update(m *maps.Map, key, val []byte, flags uint64) uint64 {
	return ctest.Call(addr(helpers.MapUpdateElem), uint64(m.Handle()), c.mem(key), c.mem(val), flags, 0)
}
func (c *caller) del(m *maps.Map, key []byte) uint64 {
	return ctest.Call(addr(helpers.MapDeleteElem), uint64(m.Handle()), c.mem(key), 0, 0, 0)
}

func TestHelperTable(t *testing.T) {
	tab := maps.HelperTable()
	for _, p := range helpers.All() {
		h, ok := tab[p.ID]
		if !ok {
			t.Errorf("helper %s missing", p.Name)
			continue
		}
		if h.Addr == 0 || h.Proto != p || h.ID != p.ID {
			t.Errorf("helper %s: %+v", p.Name, h)
		}
	}
	if len(tab) != len(helpers.All()) {
		t.Errorf("table has %d helpers, helpers.All has %d", len(tab), len(helpers.All()))
	}
}

func TestCreateErrors(t *testing.T) {
	for _, s := range []maps.Spec{
		{Name: "k", Type: maps.Array, KeySize: 8, ValueSize: 8, MaxEntries: 1},
		{Name: "v0", Type: maps.Array, KeySize: 4, ValueSize: 0, MaxEntries: 1},
		{Name: "n0", Type: maps.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 0},
		{Name: "bigkey", Type: maps.Hash, KeySize: 513, ValueSize: 4, MaxEntries: 1},
		{Name: "flags", Type: maps.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: 1 << 20},
		{Name: "lruflag", Type: maps.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: maps.FlagNoCommonLRU},
		{Name: "type", Type: 5, KeySize: 4, ValueSize: 4, MaxEntries: 1},
		{Name: "ring3", Type: maps.RingBuf, MaxEntries: 3 * 4096},
		{Name: "ringsmall", Type: maps.RingBuf, MaxEntries: 64},
		{Name: "ringkey", Type: maps.RingBuf, KeySize: 4, MaxEntries: 4096},
		{Name: "contents", Type: maps.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1,
			Contents: []maps.KV{{Key: u32(1), Value: u32(1)}}},
	} {
		m, err := maps.New(s)
		if err == nil {
			m.Close()
			t.Errorf("New(%s) succeeded", s.Name)
			continue
		}
		t.Logf("%s: %v", s.Name, err)
	}
}

func TestArray(t *testing.T) {
	m := mustNew(t, maps.Spec{Name: "arr", Type: maps.Array, KeySize: 4, ValueSize: 12, MaxEntries: 10})
	c := newCaller(t)
	ref := m.Ref()
	if ref.Handle == 0 || ref.ArrayBase == 0 || ref.ArrayStride != 16 || ref.ArrayBase%8 != 0 {
		t.Fatalf("ref %+v", ref)
	}
	for i := uint32(0); i < 10; i++ {
		if p := c.lookup(m, u32(i)); p != uint64(ref.ArrayBase)+uint64(i)*16 {
			t.Errorf("lookup %d = %#x, want ArrayBase+%d", i, p, i*16)
		}
	}
	if p := c.lookup(m, u32(10)); p != 0 {
		t.Errorf("lookup out of range = %#x", p)
	}
	val := []byte("hello world!")
	if r := c.update(m, u32(3), val, 0); r != 0 {
		t.Fatalf("update = %d", int64(r))
	}
	if got := ctest.Bytes(c.lookup(m, u32(3)), 12); string(got) != string(val) {
		t.Errorf("value %q", got)
	}
	if got, err := m.Lookup(u32(3)); err != nil || string(got) != string(val) {
		t.Errorf("Go lookup %q %v", got, err)
	}
	for _, tc := range []struct {
		key   uint32
		flags uint64
		want  uint64
	}{
		{3, 1, neg(syscall.EEXIST)}, {3, 2, 0}, {3, 3, neg(syscall.EINVAL)}, {10, 0, neg(syscall.E2BIG)},
	} {
		if r := c.update(m, u32(tc.key), val, tc.flags); r != tc.want {
			t.Errorf("update key %d flags %d = %d, want %d", tc.key, tc.flags, int64(r), int64(tc.want))
		}
	}
	if r := c.del(m, u32(3)); r != neg(syscall.EINVAL) {
		t.Errorf("delete = %d", int64(r))
	}
	// Go side errors.
	if err := m.Update(u32(1), val, maps.UpdateNoExist); !errors.Is(err, maps.ErrKeyExists) || !errors.Is(err, syscall.EEXIST) {
		t.Errorf("NOEXIST: %v", err)
	}
	if err := m.Update(u32(1), val, 7); !errors.Is(err, maps.ErrBadFlags) {
		t.Errorf("bad flags: %v", err)
	}
	if err := m.Update(u32(10), val, 0); !errors.Is(err, syscall.E2BIG) ||
		err.Error() != "index 10 out of range: array map arr has 10 entries" {
		t.Errorf("index 10: %v", err)
	}
	if _, err := m.Lookup(u32(10)); !errors.Is(err, maps.ErrKeyNotExist) {
		t.Errorf("lookup 10: %v", err)
	}
	if err := m.Delete(u32(1)); !errors.Is(err, maps.ErrNotSupported) || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("delete: %v", err)
	}
	if err := m.Update(u32(1), val[:4], 0); err == nil {
		t.Error("short value accepted")
	}
	if _, err := m.Lookup([]byte{1}); err == nil {
		t.Error("short key accepted")
	}
	keys, err := m.Keys()
	if err != nil || len(keys) != 10 || le.Uint32(keys[9]) != 9 {
		t.Errorf("keys %v %v", keys, err)
	}
	// Atomic add through the pointer a lookup returns.
	p := c.lookup(m, u32(5))
	ctest.AtomicAdd64(p, 41)
	if ctest.AtomicAdd64(p, 1) != 42 {
		t.Error("atomic add")
	}
}

func TestGlobalDataFrozen(t *testing.T) {
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	m := mustNew(t, maps.Spec{Name: ".rodata", Type: maps.Array, KeySize: 4, ValueSize: 9, MaxEntries: 1,
		Flags: maps.FlagRdonlyProg | maps.FlagMmapable, Contents: []maps.KV{{Key: u32(0), Value: data}}, Freeze: true})
	c := newCaller(t)
	if !m.Frozen() || !m.ReadOnlyForPrograms() || !m.Ref().ReadOnly {
		t.Error("not frozen / read-only")
	}
	if got := ctest.Bytes(uint64(m.Ref().ArrayBase), 9); string(got) != string(data) {
		t.Errorf("contents %v", got)
	}
	if err := m.Update(u32(0), data, 0); !errors.Is(err, maps.ErrFrozen) {
		t.Errorf("Go update of frozen map: %v", err)
	}
	if r := c.update(m, u32(0), data, 0); r != neg(syscall.EPERM) {
		t.Errorf("program update of rodata = %d", int64(r))
	}
	// .data: writable by programs, Go may write until frozen.
	d := mustNew(t, maps.Spec{Name: ".data", Type: maps.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if d.Ref().ReadOnly {
		t.Error(".data read-only for programs")
	}
	if err := d.Update(u32(0), u32(7), 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Freeze(); err != nil || !d.Frozen() {
		t.Fatal("freeze", err)
	}
	if r := c.update(d, u32(0), u32(8), 0); r != 0 {
		t.Errorf("program update of frozen .data = %d", int64(r))
	}
}

func TestHash(t *testing.T) {
	m := mustNew(t, maps.Spec{Name: "h", Type: maps.Hash, KeySize: 6, ValueSize: 8, MaxEntries: 4})
	c := newCaller(t)
	key := func(i int) []byte { return []byte{byte(i), 0, 0, 0, 0, 1} }
	for i := 0; i < 4; i++ {
		if r := c.update(m, key(i), u64(uint64(i*10)), 1); r != 0 {
			t.Fatalf("insert %d = %d", i, int64(r))
		}
	}
	if r := c.update(m, key(4), u64(1), 0); r != neg(syscall.E2BIG) {
		t.Errorf("insert into full map = %d", int64(r))
	}
	if err := m.Update(key(4), u64(1), 0); !errors.Is(err, maps.ErrMapFull) {
		t.Errorf("Go insert into full map: %v", err)
	}
	p := c.lookup(m, key(2))
	if p == 0 || le.Uint64(ctest.Bytes(p, 8)) != 20 || p%8 != 0 {
		t.Fatalf("lookup 2 = %#x", p)
	}
	// Updating an existing key works when full and keeps the value address.
	if r := c.update(m, key(2), u64(21), 0); r != 0 || c.lookup(m, key(2)) != p || le.Uint64(ctest.Bytes(p, 8)) != 21 {
		t.Errorf("update existing = %d", int64(r))
	}
	for _, tc := range []struct {
		k     int
		flags uint64
		want  uint64
	}{{2, 1, neg(syscall.EEXIST)}, {5, 2, neg(syscall.ENOENT)}, {2, 4, neg(syscall.EINVAL)}, {2, 2, 0}} {
		if r := c.update(m, key(tc.k), u64(1), tc.flags); r != tc.want {
			t.Errorf("update key %d flags %d = %d, want %d", tc.k, tc.flags, int64(r), int64(tc.want))
		}
	}
	if r := c.del(m, key(1)); r != 0 {
		t.Errorf("delete = %d", int64(r))
	}
	if r := c.del(m, key(1)); r != neg(syscall.ENOENT) {
		t.Errorf("delete missing = %d", int64(r))
	}
	if c.lookup(m, key(1)) != 0 {
		t.Error("deleted key found")
	}
	if r := c.update(m, key(7), u64(70), 0); r != 0 {
		t.Errorf("insert after delete = %d", int64(r))
	}
	if err := m.Delete(key(9)); !errors.Is(err, maps.ErrKeyNotExist) {
		t.Errorf("Go delete missing: %v", err)
	}
	if err := m.Update(key(7), u64(1), maps.UpdateNoExist); !errors.Is(err, maps.ErrKeyExists) {
		t.Errorf("Go NOEXIST: %v", err)
	}
	if err := m.Update(key(8), u64(1), maps.UpdateExist); !errors.Is(err, maps.ErrKeyNotExist) {
		t.Errorf("Go EXIST: %v", err)
	}
	got := map[byte]uint64{}
	if err := m.Iterate(func(k, v []byte) bool { got[k[0]] = le.Uint64(v); return true }); err != nil {
		t.Fatal(err)
	}
	want := map[byte]uint64{0: 0, 2: 1, 3: 30, 7: 70}
	if len(got) != len(want) {
		t.Errorf("iterate: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("iterate: %v, want %v", got, want)
		}
	}
	if c.del(m, []byte{1, 2, 3, 4, 5, 6}) != neg(syscall.ENOENT) {
		t.Error("delete of never-inserted key")
	}
}

// Many keys in a larger map: collisions, chains, delete in the middle.
func TestHashMany(t *testing.T) {
	const n = 5000
	m := mustNew(t, maps.Spec{Name: "hm", Type: maps.Hash, KeySize: 8, ValueSize: 8, MaxEntries: n, Flags: maps.FlagZeroSeed})
	for i := uint64(0); i < n; i++ {
		if err := m.Update(u64(i*977), u64(i), maps.UpdateNoExist); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(0); i < n; i += 2 {
		if err := m.Delete(u64(i * 977)); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(0); i < n; i++ {
		v, err := m.Lookup(u64(i * 977))
		if i%2 == 0 {
			if !errors.Is(err, maps.ErrKeyNotExist) {
				t.Fatalf("deleted key %d: %v", i, err)
			}
		} else if err != nil || le.Uint64(v) != i {
			t.Fatalf("key %d: %v %v", i, v, err)
		}
	}
	keys, err := m.Keys()
	if err != nil || len(keys) != n/2 {
		t.Errorf("%d keys, %v", len(keys), err)
	}
}

func TestLRUEvictionOrder(t *testing.T) {
	m := mustNew(t, maps.Spec{Name: "lru", Type: maps.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 4})
	c := newCaller(t)
	for i := uint32(1); i <= 4; i++ {
		if r := c.update(m, u32(i), u64(uint64(i)), 0); r != 0 {
			t.Fatal(int64(r))
		}
	}
	present := func(want ...uint32) {
		t.Helper()
		keys, _ := m.Keys()
		set := map[uint32]bool{}
		for _, k := range keys {
			set[le.Uint32(k)] = true
		}
		if len(set) != len(want) {
			t.Fatalf("keys %v, want %v", set, want)
		}
		for _, w := range want {
			if !set[w] {
				t.Fatalf("keys %v, want %v", set, want)
			}
		}
	}
	c.lookup(m, u32(1)) // order now 2 3 4 1
	if r := c.update(m, u32(5), u64(5), 0); r != 0 {
		t.Fatalf("insert into full LRU = %d", int64(r))
	}
	present(1, 3, 4, 5) // 2 evicted
	c.lookup(m, u32(3))
	c.update(m, u32(4), u64(44), 2) // update counts as use: order 1 5 3 4
	if r := c.update(m, u32(6), u64(6), 1); r != 0 {
		t.Fatalf("NOEXIST insert into full LRU = %d", int64(r))
	}
	present(3, 4, 5, 6) // 1 evicted
	if err := m.Update(u32(7), u64(7), 0); err != nil {
		t.Fatal(err)
	}
	present(3, 4, 6, 7) // 5 evicted
	if c.del(m, u32(3)) != 0 || c.update(m, u32(8), u64(8), 0) != 0 {
		t.Fatal("delete/insert")
	}
	present(4, 6, 7, 8) // free element used, nothing evicted

	// Control-plane lookups (Go, dumps) do not count as uses.
	if _, err := m.Lookup(u32(4)); err != nil {
		t.Fatal(err)
	}
	c.update(m, u32(9), u64(9), 0)
	present(6, 7, 8, 9) // 4 evicted although Go just read it
}

func TestPerCPUArray(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := mustNew(t, maps.Spec{Name: "pc", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 3})
	c := newCaller(t)
	if m.Ref().ArrayBase != 0 || m.ValueBufSize() != maps.PerCPUSlots*8 {
		t.Errorf("ref %+v, buf %d", m.Ref(), m.ValueBufSize())
	}
	slot := ctest.Call(addr(helpers.GetSmpProcessorID), 0, 0, 0, 0, 0)
	if slot >= maps.PerCPUSlots || uint32(slot) != maps.ThisSlot() {
		t.Fatalf("slot %d, ThisSlot %d", slot, maps.ThisSlot())
	}
	if r := c.update(m, u32(2), u32(77), 0); r != 0 {
		t.Fatal(int64(r))
	}
	p := c.lookup(m, u32(2))
	if p == 0 || le.Uint32(ctest.Bytes(p, 4)) != 77 || c.lookup(m, u32(3)) != 0 {
		t.Fatal("lookup")
	}
	v, err := m.Lookup(u32(2))
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < maps.PerCPUSlots; s++ {
		want := uint32(0)
		if uint64(s) == slot {
			want = 77
		}
		if got := le.Uint32(v[s*8:]); got != want {
			t.Errorf("slot %d = %d, want %d", s, got, want)
		}
	}
	if err := m.Update(u32(1), u32(5), 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Lookup(u32(1)); le.Uint32(v[8*(maps.PerCPUSlots-1):]) != 5 || le.Uint32(ctest.Bytes(c.lookup(m, u32(1)), 4)) != 5 {
		t.Error("single value not replicated")
	}
	if c.del(m, u32(1)) != neg(syscall.EINVAL) || c.update(m, u32(1), u32(1), 1) != neg(syscall.EEXIST) {
		t.Error("per-CPU delete / NOEXIST")
	}
}

func TestCompatible(t *testing.T) {
	s := maps.Spec{Name: "c", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16}
	m := mustNew(t, s)
	if err := m.Compatible(s); err != nil {
		t.Error(err)
	}
	for _, o := range []maps.Spec{
		{Name: "c", Type: maps.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 16},
		{Name: "c", Type: maps.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 16},
		{Name: "c", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 32},
		{Name: "c", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Flags: maps.FlagRdonlyProg},
	} {
		if err := m.Compatible(o); err == nil {
			t.Errorf("%+v compatible", o)
		}
	}
}

func TestClosed(t *testing.T) {
	m, err := maps.New(maps.Spec{Name: "c", Type: maps.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	m.Close()
	if _, err := m.Lookup(u32(0)); !errors.Is(err, maps.ErrClosed) {
		t.Errorf("lookup after close: %v", err)
	}
	if m.Handle() != 0 || m.Ref().Handle != 0 {
		t.Error("handle after close")
	}
}

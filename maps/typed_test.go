package maps_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/ncclbpf/ncclbpf/maps"
)

type stats struct {
	Calls uint64
	Bytes uint32
	_     [4]byte
}

func TestTyped(t *testing.T) {
	m := mustNew(t, maps.Spec{Name: "stats", Type: maps.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 8})
	tm, err := maps.NewTyped[uint32, stats](m)
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.Update(7, stats{Calls: 3, Bytes: 4096}, maps.UpdateAny); err != nil {
		t.Fatal(err)
	}
	if v, err := tm.Lookup(7); err != nil || v.Calls != 3 || v.Bytes != 4096 {
		t.Errorf("lookup %+v %v", v, err)
	}
	if _, err := tm.Lookup(8); !errors.Is(err, maps.ErrKeyNotExist) {
		t.Errorf("missing key: %v", err)
	}
	n := 0
	tm.Iterate(func(k uint32, v stats) bool { n++; return k == 7 && v.Calls == 3 })
	if n != 1 || tm.Delete(7) != nil || tm.Map() != m {
		t.Error("iterate/delete")
	}
	if _, err := maps.NewTyped[uint64, stats](m); err == nil {
		t.Error("wrong key size accepted")
	}
	if _, err := maps.NewTyped[uint32, []byte](m); err == nil {
		t.Error("variable-size value accepted")
	}
	pc := mustNew(t, maps.Spec{Name: "pc", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 2})
	tp, err := maps.NewTyped[uint32, uint32](pc)
	if err != nil {
		t.Fatal(err)
	}
	tp.Update(1, 9, 0)
	if vs, err := tp.LookupPerCPU(1); err != nil || len(vs) != maps.PerCPUSlots || vs[5] != 9 {
		t.Errorf("per-CPU lookup %v %v", vs, err)
	}
	if _, err := tp.Lookup(1); !errors.Is(err, maps.ErrNotSupported) {
		t.Errorf("plain lookup on per-CPU map: %v", err)
	}
}

func TestDump(t *testing.T) {
	u32t := &btf.Int{Name: "u32", Size: 4}
	s32t := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	char := &btf.Int{Name: "char", Size: 1, Encoding: btf.Char | btf.Signed}
	algo := &btf.Enum{Name: "algo", Size: 4, Values: []btf.EnumValue{{Name: "RING", Value: 1}, {Name: "TREE", Value: 0}}}
	val := &btf.Struct{Name: "decision", Size: 24, Members: []btf.Member{
		{Name: "algo", Type: algo, Offset: 0},
		{Name: "delta", Type: &btf.Typedef{Name: "s32", Type: s32t}, Offset: 32},
		{Name: "tag", Type: &btf.Array{Type: char, Nelems: 8}, Offset: 64},
		{Name: "lo", Type: u32t, Offset: 128, BitfieldSize: 4},
		{Name: "hi", Type: s32t, Offset: 132, BitfieldSize: 4},
		{Name: "n", Type: &btf.Array{Type: &btf.Int{Name: "u8", Size: 1}, Nelems: 2}, Offset: 136},
	}}
	m := mustNew(t, maps.Spec{Name: "decisions", Type: maps.Hash, KeySize: 4, ValueSize: 24, MaxEntries: 4,
		Key: u32t, Value: val})
	v := make([]byte, 24)
	le.PutUint32(v, 1)
	le.PutUint32(v[4:], uint32(0xfffffffe))
	copy(v[8:], "ring\x00")
	v[16] = 0xf5 // lo = 5, hi = -1
	v[17], v[18] = 3, 4
	if err := m.Update(u32(42), v, 0); err != nil {
		t.Fatal(err)
	}
	d, err := maps.Dump(m)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	d.WriteText(&text)
	wantText := "map decisions (hash, key 4 bytes, value 24 bytes, 1/4 entries)\n" +
		`  42: {algo: RING, delta: -2, tag: "ring", lo: 5, hi: -1, n: [3, 4]}` + "\n"
	if text.String() != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), wantText)
	}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"entries":[{"key":42,"value":{"algo":"RING","delta":-2,"tag":"ring","lo":5,"hi":-1,"n":[3,4]}}]`) {
		t.Errorf("json: %s", js)
	}

	// Global data: a data section with named variables; no BTF: hex.
	sec := &btf.Datasec{Name: ".rodata", Size: 12, Vars: []btf.VarSecinfo{
		{Type: &btf.Var{Name: "min_bytes", Type: u32t}, Offset: 0, Size: 4},
		{Type: &btf.Var{Name: "ptr", Type: &btf.Pointer{Target: u32t}}, Offset: 4, Size: 8},
	}}
	ro := mustNew(t, maps.Spec{Name: ".rodata", Type: maps.Array, KeySize: 4, ValueSize: 12, MaxEntries: 1,
		Value: sec, Contents: []maps.KV{{Key: u32(0), Value: []byte{0, 4, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0}}}, Freeze: true})
	d, _ = maps.Dump(ro)
	text.Reset()
	d.WriteText(&text)
	if !strings.Contains(text.String(), "frozen)\n  0: {min_bytes: 1024, ptr: 0x10}\n") {
		t.Errorf("rodata text:\n%s", text.String())
	}
	pc := mustNew(t, maps.Spec{Name: "pc", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, Key: u32t, Value: u32t})
	buf := make([]byte, pc.ValueBufSize())
	buf[3*8] = 9
	pc.Update(u32(0), buf, 0)
	d, _ = maps.Dump(pc)
	text.Reset()
	d.WriteText(&text)
	if !strings.Contains(text.String(), "  0: per-cpu{slot 3: 9}\n") {
		t.Errorf("per-CPU text:\n%s", text.String())
	}
	// A BTF type larger than the value is an error, not a panic.
	bad := mustNew(t, maps.Spec{Name: "bad", Type: maps.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Value: val})
	if _, err := maps.Dump(bad); err == nil {
		t.Error("oversized BTF type accepted")
	}
}

package control

import (
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
)

func val64(vs ...int64) string {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return hex.EncodeToString(b)
}

func TestParseReduce(t *testing.T) {
	r, err := ParseReduce("min:2,mean:1", "u64", 24)
	if err != nil || len(r.Ops) != 3 || r.Ops[0] != OpMin || r.Ops[2] != OpMean {
		t.Fatalf("%+v %v", r, err)
	}
	if r, err := ParseReduce("max", "u32", 12); err != nil || len(r.Ops) != 3 {
		t.Fatalf("%+v %v", r, err)
	}
	for _, c := range []struct{ spec, elem string }{
		{"median", "u64"}, {"min:2", "u64"}, {"min:2,max:2", "u64"}, {"sum", "f64"}, {"min:x", "u64"}, {"sum", "u64"},
	} {
		size := uint32(24)
		if c.spec == "sum" && c.elem == "u64" {
			size = 20 // not a whole number of elements
		}
		if _, err := ParseReduce(c.spec, c.elem, size); err == nil {
			t.Errorf("ParseReduce(%q, %q, %d) accepted", c.spec, c.elem, size)
		}
	}
}

// Each key is reduced over the ranks that have it; each element by its own
// operation; the mean rounds toward zero. Mutation caught: a mean divided
// by the number of processes instead of the ranks having the key.
func TestPartialReduce(t *testing.T) {
	spec, _ := ParseReduce("sum:1,mean:1,min:1,max:1", "i64", 32)
	p := NewPartial("local", 4, 32, spec)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Add([]KV{{"01000000", val64(1, 10, 5, -3)}, {"02000000", val64(7, 7, 7, 7)}}))
	must(p.Add([]KV{{"01000000", val64(2, 11, -4, 9)}}))
	must(p.Add([]KV{{"01000000", val64(3, 13, 6, 1)}}))
	res, err := p.Result()
	must(err)
	if len(res) != 2 || res[0].Key != "01000000" || res[0].Value != val64(6, 11, -4, 9) || res[1].Value != val64(7, 7, 7, 7) {
		t.Fatalf("result: %+v", res)
	}
	if err := p.Add([]KV{{"01", val64(1, 1, 1, 1)}}); err == nil {
		t.Fatal("short key accepted")
	}
}

// A sum that does not fit the element type is an error, not a wrapped value.
func TestPartialOverflow(t *testing.T) {
	spec, _ := ParseReduce("sum", "u32", 4)
	p := NewPartial("m", 4, 4, spec)
	p.Add([]KV{{"00000000", "ffffffff"}})
	p.Add([]KV{{"00000000", "01000000"}})
	if _, err := p.Result(); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("overflow: %v", err)
	}
	spec, _ = ParseReduce("mean", "u32", 4)
	p = NewPartial("m", 4, 4, spec)
	p.Add([]KV{{"00000000", "ffffffff"}})
	p.Add([]KV{{"00000000", "ffffffff"}})
	if r, err := p.Result(); err != nil || r[0].Value != "ffffffff" {
		t.Fatalf("mean of two maxima: %+v %v (the sum must not wrap)", r, err)
	}
}

// Partials of several nodes, saved, combined and finished, equal the
// reduction over all ranks at once.
func TestPartialCombineAcrossNodes(t *testing.T) {
	spec, _ := ParseReduce("min:1,mean:1", "u64", 16)
	ranks := [][]KV{
		{{"aa", val64(3, 100)}}, {{"aa", val64(5, 201)}, {"bb", val64(1, 1)}}, {{"aa", val64(4, 300)}},
	}
	once := NewPartial("local", 1, 16, spec)
	for _, r := range ranks {
		once.Add(r)
	}
	want, _ := once.Result()
	dir := t.TempDir()
	a, b := NewPartial("local", 1, 16, spec), NewPartial("local", 1, 16, spec)
	a.Add(ranks[0])
	a.Add(ranks[1])
	b.Add(ranks[2])
	if err := a.WriteFile(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	b.WriteFile(filepath.Join(dir, "b"))
	pa, err := ReadPartial(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := ReadPartial(filepath.Join(dir, "b"))
	if err := pa.Combine(pb); err != nil {
		t.Fatal(err)
	}
	got, _ := pa.Result()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[0].Value != val64(3, 200) {
		t.Fatalf("combined %+v, at once %+v", got, want)
	}
	other, _ := ParseReduce("max:1,mean:1", "u64", 16)
	if err := pa.Combine(NewPartial("local", 1, 16, other)); err == nil {
		t.Fatal("combined partials of different reductions")
	}
}

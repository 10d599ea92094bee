package bundle

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/ncclbpf/ncclbpf/maps"
)

func loadFile(t *testing.T, path string, opts Options) *Bundle {
	t.Helper()
	obj, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(obj, opts)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return b
}

func TestReuseKeepsCompatibleMaps(t *testing.T) {
	a := loadFile(t, "../testhost/reload_a.bpf.o", Options{Name: "a"})
	key := []byte{0, 0, 0, 0}
	val := make([]byte, 8)
	binary.LittleEndian.PutUint64(val, 41)
	if err := a.Map("hits").Update(key, val, 0); err != nil {
		t.Fatal(err)
	}
	b := loadFile(t, "../testhost/reload_b.bpf.o", Options{Name: "b", Reuse: a.Maps})
	if got := b.Reused(); len(got) != 1 || got[0] != "hits" {
		t.Fatalf("Reused = %v, want [hits]", got)
	}
	if b.Map("hits") != a.Map("hits") {
		t.Fatal("hits was not taken from the old bundle")
	}
	if b.Map("b_only") == nil {
		t.Fatal("b_only missing")
	}
	// A new bundle that is dropped before publishing leaves the old maps open.
	b.Close()
	if a.Map("hits").Handle() == 0 {
		t.Fatal("closing the unpublished bundle closed a map of the running one")
	}
	b = loadFile(t, "../testhost/reload_b.bpf.o", Options{Name: "b", Reuse: a.Maps})
	b.TakeOver(a)
	hits := b.Map("hits")
	a.Close()
	if hits.Handle() == 0 {
		t.Fatal("closing the replaced bundle closed a map the new one took over")
	}
	v, err := hits.Lookup(key)
	if err != nil || binary.LittleEndian.Uint64(v) != 41 {
		t.Fatalf("hits[0] = %v, %v; want 41 kept", v, err)
	}
	b.Close()
	if hits.Handle() != 0 {
		t.Fatal("the taken-over map outlived its new owner")
	}
}

func TestReuseRefusesIncompatible(t *testing.T) {
	other, err := maps.New(maps.Spec{Name: "hits", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a := loadFile(t, "../testhost/reload_a.bpf.o", Options{Name: "a", Reuse: []*maps.Map{other}})
	defer a.Close()
	if a.Map("hits") == other || len(a.Reused()) != 0 {
		t.Fatalf("a map of another shape (max_entries 5, not 2) was reused: %v", a.Reused())
	}
}

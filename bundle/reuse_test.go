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

// TestReuseNeverLaundersLocalData: a hot reload keeps a map's contents only
// where that cannot make a tuner decide on rank-local data. reload_a's
// tuner counts its calls in hits (a per-rank number); reload_decide writes
// no map and decides on hits[0], which its verification therefore took
// for rank-uniform. Taking over reload_a's hits would hand it the count:
// hits is created afresh instead. A map no program ever wrote (values an
// operator set the same on every rank) is still carried over.
func TestReuseNeverLaundersLocalData(t *testing.T) {
	a := loadFile(t, "../testhost/reload_a.bpf.o", Options{Name: "a"})
	defer a.Close()
	key := []byte{0, 0, 0, 0}
	val := make([]byte, 8)
	binary.LittleEndian.PutUint64(val, 500)
	if err := a.Map("hits").Update(key, val, 0); err != nil {
		t.Fatal(err)
	}
	if !a.Map("hits").ProgramWritten() {
		t.Fatal("reload_a's tuner writes hits, but the map is not marked as written by programs")
	}
	d := loadFile(t, "../testhost/reload_decide.bpf.o", Options{Name: "d", Reuse: a.Maps})
	defer d.Close()
	if got := d.Reused(); len(got) != 0 {
		t.Fatalf("Reused = %v: a map reload_a's programs wrote was handed to a tuner that decides on it", got)
	}
	if !d.DecidesOn(d.Map("hits")) {
		t.Fatal("reload_decide's tuner does not decide on hits: the test no longer tests anything")
	}
	if v, err := d.Map("hits").Lookup(key); err != nil || binary.LittleEndian.Uint64(v) != 0 {
		t.Fatalf("hits[0] = %v, %v; want a fresh 0", v, err)
	}
	// written by no program: an agreed value, carried over
	binary.LittleEndian.PutUint64(val, 7)
	if err := d.Map("hits").Update(key, val, 0); err != nil {
		t.Fatal(err)
	}
	d2 := loadFile(t, "../testhost/reload_decide.bpf.o", Options{Name: "d2", Reuse: d.Maps})
	defer d2.Close()
	if got := d2.Reused(); len(got) != 1 || got[0] != "hits" {
		t.Fatalf("Reused = %v, want [hits] (no program ever wrote it)", got)
	}
	// and a bundle that writes the map again may take it over
	a2 := loadFile(t, "../testhost/reload_a.bpf.o", Options{Name: "a2", Reuse: d2.Maps})
	defer a2.Close()
	if got := a2.Reused(); len(got) != 1 || got[0] != "hits" {
		t.Fatalf("Reused = %v, want [hits]", got)
	}
}

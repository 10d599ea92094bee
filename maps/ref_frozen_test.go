package maps_test

import (
	"errors"
	"testing"

	"github.com/ncclbpf/ncclbpf/maps"
)

// TestRefFrozen: Ref reports freezing (engines may then read a read-only
// map's values at compile time), and a frozen map refuses Go updates, so
// that nothing changes contents behind compiled code.
func TestRefFrozen(t *testing.T) {
	ro := mustNew(t, maps.Spec{Name: ".rodata", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1,
		Flags: maps.FlagRdonlyProg, Contents: []maps.KV{{Key: u32(0), Value: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}, Freeze: true})
	if r := ro.Ref(); !r.Frozen || !r.ReadOnly {
		t.Errorf(".rodata Ref: Frozen %v ReadOnly %v, want both", r.Frozen, r.ReadOnly)
	}
	if err := ro.Update(u32(0), make([]byte, 8), maps.UpdateAny); !errors.Is(err, maps.ErrFrozen) {
		t.Errorf("update of a frozen map: %v, want ErrFrozen", err)
	}
	d := mustNew(t, maps.Spec{Name: ".data", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if d.Ref().Frozen {
		t.Error(".data Ref: Frozen before Freeze")
	}
	if err := d.Freeze(); err != nil {
		t.Fatal(err)
	}
	if !d.Ref().Frozen {
		t.Error(".data Ref: not Frozen after Freeze")
	}
}

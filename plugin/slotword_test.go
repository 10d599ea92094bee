package main

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// fakeNative stands for compiled code at a fixed address.
type fakeNative struct{ entry uintptr }

func (f fakeNative) Run([]byte) (uint64, error) { return 0, nil }
func (f fakeNative) Close() error               { return nil }
func (f fakeNative) Entry() uintptr             { return f.entry }

// TestSlotWordHints: the hint bits published with a tuner program are the
// facts the verifier proved: an input is skipped only when no path reads
// it, and the decision is ignored only when no path writes it and none
// reads it (a program that reads its outputs must see them reset, never
// what an earlier program left there). A misaligned entry is refused.
func TestSlotWordHints(t *testing.T) {
	const (
		cost   = hintSkipCost
		mask   = hintSkipMask
		nodec  = hintNoDecision
		entry  = uintptr(0x7f0000001000)
		allOff = hintBits
	)
	for _, tc := range []struct {
		name, src string
		want      uintptr
	}{
		{"returns only", "mov %r0, 1\nexit", allOff},
		{"reads the mask", "ldxw %r2, [%r1+60]\nmov %r0, 0\nexit", cost | nodec},
		{"reads a cost cell", "ldxw %r2, [%r1+100]\nmov %r0, 0\nexit", mask | nodec},
		{"writes the algorithm on one path", "ldxw %r2, [%r1+24]\njeq %r2, 4, +1\nstw [%r1+148], 1\nmov %r0, 1\nexit", cost | mask},
		{"writes the channels", "stw [%r1+156], 8\nmov %r0, 1\nexit", cost | mask},
		{"reads the protocol only", "ldxw %r2, [%r1+152]\nmov %r0, 0\nexit", cost | mask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insns, err := asm.Assemble(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			cfg := verifier.Config{Hook: hook.Get(hook.Tuner)}
			res, err := cfg.Verify(insns, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := &bundle.Program{Name: tc.name, Hook: hook.Get(hook.Tuner), Verified: res, Exec: fakeNative{entry}}
			w, err := slotWord(p)
			if err != nil {
				t.Fatal(err)
			}
			if w&^allOff != entry || w&allOff != tc.want {
				t.Errorf("slot word %#x: hints %#x, want %#x", w, w&allOff, tc.want)
			}
			p.Exec = fakeNative{entry + 4}
			if _, err := slotWord(p); err == nil {
				t.Errorf("an entry at %#x (not 8-byte aligned) was accepted", entry+4)
			}
		})
	}
}

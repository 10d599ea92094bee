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

const fakeEntry = uintptr(0x7f0000001000)

// verified assembles src and verifies it for hook h, as a program at fakeEntry.
func verified(t *testing.T, h, src string) *bundle.Program {
	t.Helper()
	insns, err := asm.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verifier.Config{Hook: hook.Get(h)}
	res, err := cfg.Verify(insns, nil)
	if err != nil {
		t.Fatalf("%s: %v", h, err)
	}
	return &bundle.Program{Name: h, Hook: hook.Get(h), Verified: res, Exec: fakeNative{fakeEntry}}
}

// TestPublishedTuner: the hints published with a tuner program are the
// facts the verifier proved: an input is skipped only when no path reads
// it, and the decision is ignored only when no path writes it and none
// reads it (a program that reads its outputs must see them reset, never
// what an earlier program left there). The slot word packs them beside the
// entry. A misaligned entry is refused.
func TestPublishedTuner(t *testing.T) {
	const (
		cost  = hintSkipCost
		mask  = hintSkipMask
		nodec = hintNoDecision
	)
	for _, tc := range []struct {
		name, src string
		want      uint32
	}{
		{"returns only", "mov %r0, 1\nexit", hintBits},
		{"reads the mask", "ldxw %r2, [%r1+60]\nmov %r0, 0\nexit", cost | nodec},
		{"reads a cost cell", "ldxw %r2, [%r1+100]\nmov %r0, 0\nexit", mask | nodec},
		{"writes the algorithm on one path", "ldxw %r2, [%r1+24]\njeq %r2, 4, +1\nstw [%r1+148], 1\nmov %r0, 1\nexit", cost | mask},
		{"writes the channels", "stw [%r1+156], 8\nmov %r0, 1\nexit", cost | mask},
		{"reads the protocol only", "ldxw %r2, [%r1+152]\nmov %r0, 0\nexit", cost | mask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := verified(t, hook.Tuner, tc.src)
			r, err := publishedRecord(hook.Tuner, p)
			if err != nil {
				t.Fatal(err)
			}
			if uintptr(r.entry) != fakeEntry || uint32(r.hints) != tc.want || r.fill != 0 {
				t.Errorf("record {entry %#x, hints %#x, fill %#x}, want {%#x, %#x, 0}", uintptr(r.entry), uint32(r.hints), uint32(r.fill), fakeEntry, tc.want)
			}
			if w := slotWord(r); w != fakeEntry|uintptr(tc.want) {
				t.Errorf("slot word %#x, want %#x", w, fakeEntry|uintptr(tc.want))
			}
			p.Exec = fakeNative{fakeEntry + 4}
			if _, err := publishedRecord(hook.Tuner, p); err == nil {
				t.Errorf("an entry at %#x (not 8-byte aligned) was accepted", fakeEntry+4)
			}
		})
	}
}

// TestPublishedEveryHook: the one record of every hook: the tuner's hints
// only for the tuner, the fill groups of the fields read for the profiler
// and net hooks, nothing but the entry for chunk_size; no program, the
// zero record (its slot word 0); a program handed to another hook's slot,
// an error.
func TestPublishedEveryHook(t *testing.T) {
	type tc struct {
		hook, name, src string
		hints, fill     uint32
	}
	cases := []tc{
		{hook.Tuner, "reads n_bytes", "ldxdw %r2, [%r1+16]\nmov %r0, 0\nexit", hintBits, 0},
		{hook.TunerChunkSize, "returns only", "mov %r0, 0\nexit", 0, 0},
		{hook.TunerChunkSize, "reads n_bytes", "ldxdw %r2, [%r1+16]\nmov %r0, 0\nexit", 0, 0},
	}
	for _, h := range hook.ProfilerHookNames {
		cases = append(cases,
			tc{h, "returns only", "mov %r0, 0\nexit", 0, 0},
			tc{h, "reads comm_id and bytes", "ldxdw %r2, [%r1+0]\nldxdw %r2, [%r1+24]\nmov %r0, 0\nexit", 0, 0},
			tc{h, "reads start_ns", "ldxdw %r2, [%r1+64]\nmov %r0, 0\nexit", 0, profNeedStart},
			tc{h, "reads duration_ns", "ldxdw %r2, [%r1+80]\nmov %r0, 0\nexit", 0, profNeedStart | profNeedEnd},
			tc{h, "reads n_children and local_seq", "ldxw %r2, [%r1+104]\nldxdw %r2, [%r1+16]\nmov %r0, 0\nexit", 0, profNeedChildren | profNeedSeq},
			tc{h, "reads gpu_duration_ns and end_ns", "ldxdw %r2, [%r1+88]\nldxdw %r2, [%r1+72]\nmov %r0, 0\nexit", 0, profNeedChildren | profNeedEnd},
		)
	}
	for _, h := range hook.NetHookNames {
		cases = append(cases,
			tc{h, "returns only", "mov %r0, 0\nexit", 0, 0},
			tc{h, "reads bytes", "ldxdw %r2, [%r1+24]\nmov %r0, 0\nexit", 0, netReadBytes},
			tc{h, "reads duration_ns and flags", "ldxdw %r2, [%r1+56]\nldxw %r2, [%r1+92]\nmov %r0, 0\nexit", 0, netReadTimes | netReadFlags},
			tc{h, "reads peer_key, local_seq and tag", "ldxdw %r2, [%r1+8]\nldxdw %r2, [%r1+64]\nldxw %r2, [%r1+72]\nmov %r0, 0\nexit", 0, netReadIDs | netReadSeq | netReadReq},
			tc{h, "reads posted_bytes and event", "ldxdw %r2, [%r1+32]\nldxw %r2, [%r1+88]\nmov %r0, 0\nexit", 0, netReadPosted | netReadConst},
		)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.hook] = true
		t.Run(c.hook+"/"+c.name, func(t *testing.T) {
			p := verified(t, c.hook, c.src)
			r, err := publishedRecord(c.hook, p)
			if err != nil {
				t.Fatal(err)
			}
			if uintptr(r.entry) != fakeEntry || uint32(r.hints) != c.hints || uint32(r.fill) != c.fill {
				t.Errorf("record {entry %#x, hints %#x, fill %#x}, want {%#x, %#x, %#x}",
					uintptr(r.entry), uint32(r.hints), uint32(r.fill), fakeEntry, c.hints, c.fill)
			}
			if z, err := publishedRecord(c.hook, nil); err != nil || z != (published{}) || slotWord(z) != 0 {
				t.Errorf("no program: record %+v (slot word %#x), error %v; want the zero record", z, slotWord(z), err)
			}
			other := hook.Tuner
			if c.hook == hook.Tuner {
				other = hook.NetSendEnd
			}
			if _, err := publishedRecord(other, p); err == nil {
				t.Errorf("a %s program was published for %s", c.hook, other)
			}
		})
	}
	for _, names := range [][]string{{hook.Tuner, hook.TunerChunkSize}, hook.ProfilerHookNames, hook.NetHookNames} {
		for _, h := range names {
			if !seen[h] {
				t.Errorf("hook %s has no case", h)
			}
		}
	}
}

// TestNetReadGroups: every field of the net context belongs to a group the
// wrapper fills (net.h, NCCLBPF_NET_R_*), and the table names no other.
func TestNetReadGroups(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range hook.NetContext.Fields {
		seen[f.Name] = true
		if g, ok := netReadGroups[f.Name]; !ok || g == 0 {
			t.Errorf("net context field %s has no fill group: a program reading it would see garbage", f.Name)
		}
	}
	for name := range netReadGroups {
		if !seen[name] {
			t.Errorf("netReadGroups names %s, which the net context does not have", name)
		}
	}
}

// TestProfNeedGroups: every profiler context field the table names exists,
// with a group.
func TestProfNeedGroups(t *testing.T) {
	for name, g := range profNeedGroups {
		if hook.ProfilerContext.Field(name) == nil || g == 0 {
			t.Errorf("profNeedGroups names %s (group %#x), which the profiler context lacks or which has no group", name, g)
		}
	}
}

package verifier_test

import (
	"fmt"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// TestContextFacts: Result.Context lists exactly the context fields a
// program reads or writes, however the pointer travels (moved, offset,
// spilled and filled), and on every path.
func TestContextFacts(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // the accesses, "field@off/size:rw"
	}{
		{"none", "mov %r0, 1\nexit", "[]"},
		{"direct", "ldxw %r2, [%r1+60]\nmov %r0, 1\nexit", "[avail_mask@60/4:r]"},
		{"moved", "mov %r6, %r1\nadd %r6, 64\nldxw %r2, [%r6+8]\nmov %r0, 1\nexit", "[cost[2]@72/4:r]"},
		{"spilled and filled", "stxdw [%r10-8], %r1\nmov %r1, 0\nldxdw %r3, [%r10-8]\nldxdw %r2, [%r3+16]\nmov %r0, 1\nexit",
			"[n_bytes@16/8:r]"},
		{"both paths", "ldxw %r2, [%r1+24]\njeq %r2, 0, +2\nstw [%r1+148], 1\nja +1\nldxw %r3, [%r1+156]\nmov %r0, 0\nexit",
			"[coll_type@24/4:r algorithm@148/4:w n_channels@156/4:r]"},
		{"read and written", "ldxw %r2, [%r1+152]\nstxw [%r1+152], %r2\nmov %r0, 0\nexit", "[protocol@152/4:rw]"},
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
			var got []string
			for _, a := range res.Context {
				rw := ""
				if a.Read {
					rw += "r"
				}
				if a.Write {
					rw += "w"
				}
				got = append(got, fmt.Sprintf("%s@%d/%d:%s", a.Field, a.Offset, a.Size, rw))
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("context accesses %s, want %s", s, tc.want)
			}
			for _, a := range res.Context {
				if a.Read != res.ReadsContext(a.Offset, a.Size) {
					t.Errorf("ReadsContext(%d, %d) = %v, the access says %v", a.Offset, a.Size, !a.Read, a.Read)
				}
			}
			for _, a := range res.Context {
				if a.Write != res.WritesContext(a.Offset, a.Size) {
					t.Errorf("WritesContext(%d, %d) = %v, the access says %v", a.Offset, a.Size, !a.Write, a.Write)
				}
			}
			if res.WritesContext(100, 4) || res.WritesContext(0, 148) {
				t.Errorf("WritesContext: no program here writes an input")
			}
			if res.ReadsContext(100, 4) {
				t.Errorf("ReadsContext(100, 4): no program here reads cost[9]")
			}
		})
	}
}

package verifier_test

import (
	"github.com/ncclbpf/ncclbpf/loader"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/verifier"
)

func TestSmoke(t *testing.T) {
	maps := []*loader.MapSpec{{Name: "arr", Type: verifier.MapTypeArray, KeySize: 4, ValueSize: 64, MaxEntries: 16}}
	for _, tc := range []struct{ name, src, want string }{
		{"ret0", "mov %r0, 0\nexit", ""},
		{"ret-big", "mov %r0, 1000\nexit", "E027"},
		{"lookup-ok", `
mov %r2, %r10
add %r2, -4
stw [%r10-4], 3
lddw %r1, map(0)
call 1
jeq %r0, 0, out
ldxdw %r1, [%r0+56]
stxdw [%r0+0], %r1
out:
mov %r0, 0
exit`, ""},
		{"null", `
mov %r2, %r10
add %r2, -4
stw [%r10-4], 3
lddw %r1, map(0)
call 1
ldxdw %r1, [%r0+0]
mov %r0, 0
exit`, "E012"},
		{"loop", `
mov %r0, 0
mov %r1, 0
l:
add %r0, %r1
add %r1, 1
jlt %r1, 100, l
and %r0, 255
exit`, ""},
		{"inf", `
mov %r0, 0
l:
mov %r0, 0
ja l
`, "E025"},
	} {
		insns, err := asm.Assemble(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cfg := verifier.Config{Hook: testHook, Maps: maps}
		_, err = cfg.Verify(insns, nil)
		got := ""
		if e, ok := err.(*verifier.Error); ok {
			got = e.Code.String()[:4]
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: got %q want %q (%v)", tc.name, got, tc.want, err)
		}
	}
}

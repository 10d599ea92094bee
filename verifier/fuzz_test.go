package verifier_test

import (
	"errors"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// FuzzVerify feeds arbitrary instruction bytes to the verifier: it must
// never panic, and it returns either a Result or an *Error, never both.
func FuzzVerify(f *testing.F) {
	for _, src := range []string{
		"mov %r0, 0\nexit",
		"stw [%r10-4], 1\nlddw %r1, map(0)\nmov %r2, %r10\nadd %r2, -4\ncall 1\njeq %r0, 0, +2\nldxdw %r0, [%r0+8]\nand %r0, 1\nexit",
		"ldxw %r2, [%r1+0]\nand %r2, 7\nlsh %r2, 2\nmov %r3, %r10\nadd %r3, -32\nadd %r3, %r2\nstw [%r3+0], 1\nmov %r0, 0\nexit",
		"mov %r1, 0\nadd %r1, 1\njlt %r1, 10, -2\nmov %r0, 0\nexit",
		"call local +2\nmov %r0, 0\nexit\nmov %r0, 1\nexit",
	} {
		insns, err := asm.Assemble(src)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(asm.Encode(insns))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		insns, err := asm.Decode(b[:len(b)/8*8])
		if err != nil || len(insns) > 256 {
			return
		}
		cfg := verifier.Config{Hook: testHook, Maps: asmMaps, Complexity: 20000}
		res, err := cfg.Verify(insns, nil)
		var ve *verifier.Error
		switch {
		case err == nil && res == nil, err != nil && res != nil:
			t.Fatalf("result %v and error %v", res, err)
		case err != nil && !errors.As(err, &ve):
			t.Fatalf("error of type %T: %v", err, err)
		}
	})
}

//go:build !arm64

package arm64

import (
	"errors"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// On other architectures AArch64 code is produced (for its size and
// disassembly) but never run.
func TestRunOnAnotherArchitecture(t *testing.T) {
	insns, _ := asm.Assemble("mov %r0, 1\nexit")
	x, err := Compile(&vm.Program{Name: "elsewhere", Insns: insns})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if len(x.Code()) == 0 || x.Entry() == 0 {
		t.Fatalf("no code: %d bytes at %#x", len(x.Code()), x.Entry())
	}
	if _, err := x.Run(nil); !errors.Is(err, ErrWrongArch) {
		t.Fatalf("Run = %v, want ErrWrongArch", err)
	}
}

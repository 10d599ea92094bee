package native

import (
	"github.com/ncclbpf/ncclbpf/jit/arm64"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Arch is the architecture whose code New's engine generates.
const Arch = "arm64"

// New returns the AArch64 JIT engine (Name "jit").
func New() vm.Engine { return arm64.New() }

package native

import (
	"github.com/ncclbpf/ncclbpf/jit/amd64"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Arch is the architecture whose code New's engine generates.
const Arch = "amd64"

// New returns the x86-64 JIT engine (Name "jit").
func New() vm.Engine { return amd64.New() }

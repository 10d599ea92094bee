package bundle

import (
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/vm"
)

// defaultEngine is the engine a bundle compiles with when Options.Engine is
// nil: the JIT of the running architecture.
func defaultEngine() vm.Engine { return native.New() }

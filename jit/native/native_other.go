//go:build !amd64 && !arm64

package native

import (
	"fmt"
	"runtime"

	"github.com/ncclbpf/ncclbpf/vm"
)

// Arch is empty: there is no JIT for this architecture.
const Arch = ""

// New returns an engine whose Compile fails: there is no JIT for this
// architecture (use the interpreter).
func New() vm.Engine { return none{} }

type none struct{}

func (none) Name() string { return "jit" }

func (none) Compile(p *vm.Program) (vm.Executable, error) {
	return nil, fmt.Errorf("jit: no JIT for %s/%s; use the interpreter", runtime.GOOS, runtime.GOARCH)
}

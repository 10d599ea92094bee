// Package listing shows a program's native code, eBPF instruction by eBPF
// instruction, for either architecture on any host (the CLI's disasm
// --jit). It imports both JITs; the plugin, which needs only its own
// machine's (jit/native), does not import it.
package listing

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/jit/amd64"
	"github.com/ncclbpf/ncclbpf/jit/arm64"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/vm"
)

// Arches are the architectures Disassemble compiles for, by GOARCH name.
var Arches = []string{"amd64", "arm64"}

// Disassemble compiles p with the JIT of arch ("amd64" or "arm64"; "" is
// the running architecture's) and returns its listing: each eBPF
// instruction followed by the native code it compiled to. Code for another
// architecture is compiled, never run, so any host can show it.
func Disassemble(arch string, p *vm.Program) (string, error) {
	if arch == "" {
		arch = native.Arch
	}
	switch arch {
	case "amd64":
		return amd64.Disassemble(p)
	case "arm64":
		return arm64.Disassemble(p)
	case "":
		return "", fmt.Errorf("jit: no JIT for this architecture; --arch amd64 or arm64 shows another's code")
	}
	return "", fmt.Errorf("jit: no JIT for architecture %q (known: amd64, arm64)", arch)
}

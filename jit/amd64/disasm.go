package amd64

import (
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// NativeLines decodes code[start:end] into lines "OFFSET: HEX  INTEL-SYNTAX";
// offsets, and branch targets, count bytes from the entry point.
func NativeLines(code []byte, start, end int) []string {
	var out []string
	for off := start; off < end; {
		inst, err := x86asm.Decode(code[off:end], 64)
		if err != nil {
			out = append(out, fmt.Sprintf("%5x: %x  (bad: %v)", off, code[off], err))
			off++
			continue
		}
		text := x86asm.IntelSyntax(inst, uint64(off), nil)
		out = append(out, fmt.Sprintf("%5x: %-24x %s", off, code[off:off+inst.Len], text))
		off += inst.Len
	}
	return out
}

// Listing writes the eBPF instructions of x's program, each followed by the
// native code it compiled to (Intel syntax), then the out-of-line code.
// insns must be the program x was compiled from.
func (x *Executable) Listing(insns []asm.Instruction) string {
	return x.compiled.Listing(insns, NativeLines)
}

// Disassemble compiles p and returns its listing: each eBPF instruction
// followed by its native code (Intel syntax), then the out-of-line code.
// The callx table at the end decodes as nonsense instructions.
func Disassemble(p *vm.Program) (string, error) {
	x, err := Compile(p)
	if err != nil {
		return "", err
	}
	defer x.Close()
	return x.Listing(p.Insns), nil
}

package arm64

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// NativeLines decodes code[start:end] into lines "OFFSET: WORD  GNU-SYNTAX";
// offsets count bytes from the entry point, and a PC-relative branch or
// address also names its target's offset. Words that are not instructions
// (the callx table) print as ".word".
func NativeLines(code []byte, start, end int) []string {
	var out []string
	for off := start; off+4 <= end; off += 4 {
		word := binary.LittleEndian.Uint32(code[off:])
		inst, err := arm64asm.Decode(code[off : off+4])
		if err != nil {
			out = append(out, fmt.Sprintf("%5x: %08x  .word %#08x", off, word, word))
			continue
		}
		text := arm64asm.GNUSyntax(inst)
		for _, a := range inst.Args {
			if rel, ok := a.(arm64asm.PCRel); ok {
				text += fmt.Sprintf("  ; -> %x", int64(off)+int64(rel))
			}
		}
		out = append(out, fmt.Sprintf("%5x: %08x  %s", off, word, text))
	}
	return out
}

// Listing writes the eBPF instructions of x's program, each followed by the
// AArch64 code it compiled to (GNU syntax), then the out-of-line code.
// insns must be the program x was compiled from.
func (x *Executable) Listing(insns []asm.Instruction) string {
	return x.compiled.Listing(insns, NativeLines)
}

// Disassemble compiles p and returns its listing: each eBPF instruction
// followed by its AArch64 code, then the out-of-line code. It works on any
// host: the code is compiled, never run.
func Disassemble(p *vm.Program) (string, error) {
	x, err := Compile(p)
	if err != nil {
		return "", err
	}
	defer x.Close()
	return x.Listing(p.Insns), nil
}

package amd64

import (
	"fmt"
	"strings"

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
// native code it compiled to, then the out-of-line code. insns must be the
// program x was compiled from.
func (x *Executable) Listing(insns []asm.Instruction) string {
	code := x.Code()
	if code == nil {
		return "(closed)\n"
	}
	var b strings.Builder
	m := x.PCMap()
	fmt.Fprintf(&b, "; prologue\n")
	for _, l := range NativeLines(code, 0, m[0].Start) {
		fmt.Fprintf(&b, "\t%s\n", l)
	}
	for pc := 0; pc < len(insns) && pc < len(m); {
		text, width := asm.FormatAt(insns, pc)
		fmt.Fprintf(&b, "%d: %s\n", pc, text)
		end := m[min(pc+width, len(m))-1].End
		for _, l := range NativeLines(code, m[pc].Start, end) {
			fmt.Fprintf(&b, "\t%s\n", l)
		}
		pc += width
	}
	fmt.Fprintf(&b, "; out of line: common return, unwind and fault stubs, callx table (%d bytes)\n", len(code)-m[len(m)-1].End)
	for _, l := range NativeLines(code, m[len(m)-1].End, len(code)) {
		fmt.Fprintf(&b, "\t%s\n", l)
	}
	return b.String()
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

package listing

import (
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/vm"
)

// TestDisassembleBothArches: one program listed in both architectures'
// code, each instruction under the eBPF it came from, on any host.
func TestDisassembleBothArches(t *testing.T) {
	insns, err := asm.Assemble("mov %r0, 7\njeq %r1, 0, +1\nadd %r0, 1\nexit\n")
	if err != nil {
		t.Fatal(err)
	}
	p := &vm.Program{Name: "t", Insns: insns}
	want := map[string][]string{
		"amd64": {"mov eax, 0x7", "test rdi, rdi", "cmovnz rax, r9"},
		"arm64": {"mov x7, #0x7", "cmp x0, #0x0", "csel x7, x7, x11, eq"},
	}
	for _, arch := range Arches {
		text, err := Disassemble(arch, p)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		for i, line := range []string{"0: mov %r0, 7", "1: jeq %r1, 0, +1", "3: exit", "; out of line"} {
			if !strings.Contains(text, line) {
				t.Errorf("%s: listing lacks eBPF line %d %q:\n%s", arch, i, line, text)
			}
		}
		for _, w := range want[arch] {
			if !strings.Contains(text, w) {
				t.Errorf("%s: listing lacks %q:\n%s", arch, w, text)
			}
		}
	}
	if _, err := Disassemble("riscv64", p); err == nil || !strings.Contains(err.Error(), "riscv64") {
		t.Errorf("an unknown architecture: %v", err)
	}
}

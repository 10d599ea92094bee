package disasm

import (
	"io"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/conformance"
	"github.com/ncclbpf/ncclbpf/internal/listing"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/vm"
)

// The native listings of disasm --jit (x86-64 or AArch64 code).

// Placeholder addresses for listings: maps at mapHandleBase + 64 KiB * i,
// their values at mapValueBase + 64 MiB * i; helpers at helperBase + 16*id.
const (
	mapHandleBase = 0x100000
	mapValueBase  = 0x40000000
	helperBase    = 0x7f0000000000
)

// writeJITListing compiles insns with placeholder maps and helpers (every
// helper id the program calls, plus the conformance unwind helper) and
// writes the listing of arch's JIT ("" for this machine's).
func writeJITListing(w io.Writer, name string, insns []asm.Instruction, specs []*loader.MapSpec, arch string) error {
	maps := make([]vm.MapRef, len(specs))
	for i, s := range specs {
		stride := (s.ValueSize + 7) &^ 7
		maps[i] = vm.MapRef{Name: s.Name, Handle: uintptr(mapHandleBase + i<<16), Type: uint32(s.Type), KeySize: s.KeySize,
			ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, ArrayBase: uintptr(mapValueBase + i<<26), ArrayStride: stride}
	}
	table := vm.HelperTable{}
	for _, ins := range insns {
		if ins.Op == asm.OpCall && ins.Src == asm.PseudoHelper {
			id := helpers.ID(ins.Imm)
			table[id] = vm.Helper{ID: id, Addr: uintptr(helperBase + 16*int64(uint32(ins.Imm))), Proto: helpers.Lookup(id)}
		}
	}
	if _, ok := table[conformance.UnwindHelper]; !ok {
		table[conformance.UnwindHelper] = vm.Helper{ID: conformance.UnwindHelper, Addr: helperBase + 16*uintptr(conformance.UnwindHelper), UnwindOnZero: true}
	}
	text, err := listing.Disassemble(arch, &vm.Program{Name: name, Insns: insns, Maps: maps, Helpers: table})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

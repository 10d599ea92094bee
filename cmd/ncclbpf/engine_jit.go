package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/conformance"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/jit/amd64"
	"github.com/ncclbpf/ncclbpf/jit/native"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/vm"
)

// This file registers the x86-64 JIT as an engine and adds --jit to the
// disasm command (registered by disasm.go, whose init runs before this
// file's): with --jit each program is compiled and every eBPF instruction
// is followed by the native code it became.
func init() {
	registerEngine("jit", func() vm.Engine { return native.New() }) // the running architecture's JIT
	c := commands["disasm"]
	if c == nil {
		return
	}
	inner := c.Run
	c.Args = "[--jit] " + c.Args
	c.Help += `

--jit compiles each program with the x86-64 JIT and prints, under each
instruction, the native code it compiled to (offset from the entry point,
bytes, Intel syntax), then the out-of-line code: common return path, unwind
and fault stubs, callx table. Maps and helpers get placeholder addresses:
the listing is for reading; the code never runs.`
	c.Examples = append(c.Examples, "ncclbpf disasm --jit policy.bpf.o  # eBPF and x86-64 side by side")
	c.Run = func(e *env, args []string) error {
		rest, jit := stripFlag(args, "jit")
		if !jit {
			return inner(e, rest)
		}
		return runDisasmJIT(e, rest)
	}
}

// stripFlag removes --name and -name (before any "--") from args.
func stripFlag(args []string, name string) ([]string, bool) {
	out := make([]string, 0, len(args))
	found := false
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...), found
		}
		if a == "--"+name || a == "-"+name || a == "--"+name+"=true" {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}

func runDisasmJIT(e *env, args []string) error {
	fs := e.flags()
	section := fs.String("section", "", "ELF objects: print only the programs of this section (or with this name)")
	args, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usageErrorf("want one FILE, got %d arguments", len(args))
	}
	data, err := readInput(args[0])
	if err != nil {
		return err
	}
	switch {
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		coll, err := loader.LoadBytes(data)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		found := false
		for _, p := range coll.Programs {
			if *section != "" && p.Section != *section && p.Name != *section {
				continue
			}
			if found {
				fmt.Fprintln(e.Stdout)
			}
			found = true
			fmt.Fprintf(e.Stdout, "# section %q, program %s: %d instruction slots\n", p.Section, p.Name, len(p.Insns))
			if err := writeJITListing(e.Stdout, p.Name, p.Insns, coll.Maps); err != nil {
				return err
			}
		}
		if !found {
			return fmt.Errorf("%s: no program matches --section %q", args[0], *section)
		}
		return nil
	case *section != "":
		return usageErrorf("--section applies to ELF objects; %s is not one", args[0])
	case strings.HasSuffix(args[0], ".data"):
		t, err := conformance.Parse(args[0], data)
		if err != nil {
			return err
		}
		insns, err := t.Program()
		if err != nil {
			return err
		}
		return writeJITListing(e.Stdout, args[0], insns, nil)
	}
	insns, err := asm.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: not an ELF object or .data file, and as raw instructions: %w", args[0], err)
	}
	return writeJITListing(e.Stdout, args[0], insns, nil)
}

// Placeholder addresses for listings: maps at mapHandleBase + 64 KiB * i,
// their values at mapValueBase + 64 MiB * i; helpers at helperBase + 16*id.
const (
	mapHandleBase = 0x100000
	mapValueBase  = 0x40000000
	helperBase    = 0x7f0000000000
)

// writeJITListing compiles insns with placeholder maps and helpers (every
// helper id the program calls, plus the conformance unwind helper) and
// writes the JIT's listing.
func writeJITListing(w io.Writer, name string, insns []asm.Instruction, specs []*loader.MapSpec) error {
	maps := make([]vm.MapRef, len(specs))
	for i, s := range specs {
		stride := (s.ValueSize + 7) &^ 7
		maps[i] = vm.MapRef{Name: s.Name, Handle: uintptr(mapHandleBase + i<<16), Type: s.Type, KeySize: s.KeySize,
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
	text, err := amd64.Disassemble(&vm.Program{Name: name, Insns: insns, Maps: maps, Helpers: table})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

package disasm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/internal/conformance"
	"github.com/ncclbpf/ncclbpf/loader"
)

// Options choose what Write prints.
type Options struct {
	Section string // ELF objects: only the programs of this section (or with this name)
	Arch    string // with JIT: the architecture whose code to show, amd64 or arm64 ("": this machine's)
	Plain   bool   // only assembler text: no pc, annotations or source lines
	Raw     bool   // raw bytes: print unknown slots as .insn instead of refusing the file
	JIT     bool   // compile with the JIT and print the native code under each instruction
	JSON    bool   // the programs and their instructions as JSON
}

// Write disassembles data, read from the file called name: an ELF object
// built by clang -target bpf, a .data conformance test, or raw
// little-endian instruction bytes, and prints it to w as o says.
func Write(w io.Writer, name string, data []byte, o *Options) error {
	if len(data) == 0 {
		return fmt.Errorf("%s is empty: want an ELF object, a .data test or raw instruction bytes", name)
	}
	switch {
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		coll, err := loader.LoadBytes(data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if o.JSON {
			return writeJSON(w, coll, o.Section)
		}
		return disasmCollection(w, coll, o.Section, o.Plain, o.JIT, o.Arch)
	case o.Section != "":
		return cli.Usagef("--section applies to ELF objects; %s is not one", name)
	case strings.HasSuffix(name, ".data"):
		t, err := conformance.Parse(name, data)
		if err != nil {
			return err
		}
		insns, err := t.Program()
		if err != nil {
			return err
		}
		if o.JIT {
			return writeJITListing(w, name, insns, nil, o.Arch)
		}
		if o.JSON {
			return cli.WriteJSON(w, []Program{{Name: name, Insns: listInsns(insns, nil)}})
		}
		writeInsns(w, insns, nil, o.Plain)
		return nil
	}
	insns, err := asm.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: not an ELF object or .data file, and as raw instructions: %w", name, err)
	}
	if o.JIT {
		return writeJITListing(w, name, insns, nil, o.Arch)
	}
	if !o.Raw {
		for pc := 0; pc < len(insns); {
			text, width := asm.FormatAt(insns, pc)
			if strings.HasPrefix(text, ".insn ") {
				return fmt.Errorf("%s is not an ELF object or a .data test, and not raw instructions either: slot %d (%#016x) is no known eBPF instruction (--raw prints the bytes anyway)", name, pc, insns[pc].Word())
			}
			pc += width
		}
	}
	if o.JSON {
		return cli.WriteJSON(w, []Program{{Name: name, Insns: listInsns(insns, nil)}})
	}
	writeInsns(w, insns, nil, o.Plain)
	return nil
}

// disasmCollection prints the programs of coll (those of section, if
// given): their eBPF with source lines, or with jit their native listing.
func disasmCollection(w io.Writer, coll *loader.CollectionSpec, section string, plain, jit bool, arch string) error {
	progs, err := pickPrograms(coll, section)
	if err != nil {
		return err
	}
	for i, p := range progs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if !plain {
			fmt.Fprintf(w, "# section %q, program %s: %d instruction slots\n", p.Section, p.Name, len(p.Insns))
		}
		if jit {
			var listing strings.Builder
			if err := writeJITListing(&listing, p.Name, p.Insns, coll.Maps, arch); err != nil {
				return err
			}
			io.WriteString(w, withSourceLines(listing.String(), &programInfo{coll: coll, prog: p}))
			continue
		}
		writeInsns(w, p.Insns, &programInfo{coll: coll, prog: p}, plain)
	}
	return nil
}

// pickPrograms returns the programs of coll in section (all for "").
func pickPrograms(coll *loader.CollectionSpec, section string) ([]*loader.ProgramSpec, error) {
	var progs []*loader.ProgramSpec
	var names []string
	for _, p := range coll.Programs {
		names = append(names, fmt.Sprintf("%s (%s)", p.Section, p.Name))
		if section == "" || p.Section == section || p.Name == section {
			progs = append(progs, p)
		}
	}
	if len(progs) == 0 {
		if section == "" {
			return nil, errors.New("the object has no programs")
		}
		return nil, fmt.Errorf("no program in section %q; the object has: %s", section, strings.Join(names, ", "))
	}
	return progs, nil
}

// programInfo adds what an ELF object knows to a disassembly: function
// names, source lines, map and variable names.
type programInfo struct {
	coll *loader.CollectionSpec
	prog *loader.ProgramSpec
}

// writeInsns prints insns one per line; with info, function labels and
// source lines are interleaved and operands annotated.
func writeInsns(w io.Writer, insns []asm.Instruction, info *programInfo, plain bool) {
	if plain {
		fmt.Fprint(w, asm.Format(insns))
		return
	}
	digits := len(fmt.Sprint(max(len(insns)-1, 0)))
	lastLine := ""
	for pc := 0; pc < len(insns); {
		text, width := asm.FormatAt(insns, pc)
		if info != nil {
			writeSourceHeader(w, info, pc, &lastLine, strings.Repeat(" ", digits+2))
		}
		if note := annotate(insns, pc, info); note != "" {
			text = fmt.Sprintf("%-32s # %s", text, note)
		}
		fmt.Fprintf(w, "%*d: %s\n", digits, pc, text)
		pc += width
	}
}

// writeSourceHeader prints what precedes the instruction at pc: the label of
// a function starting there, and its C source line (after indent) when it
// differs from *lastLine, the key of the source line printed last.
func writeSourceHeader(w io.Writer, info *programInfo, pc int, lastLine *string, indent string) {
	for _, f := range info.prog.Funcs {
		if f.Start == pc {
			fmt.Fprintf(w, "%s:\n", f.Name)
		}
	}
	if pc >= len(info.prog.Lines) {
		return
	}
	l := info.prog.Lines[pc]
	if l == nil {
		return
	}
	if key := fmt.Sprintf("%s:%d", l.File, l.Line); key != *lastLine {
		*lastLine = key
		src := l.Source
		if src == "" {
			src = "(no source text)"
		}
		fmt.Fprintf(w, "%s# %s:%d: %s\n", indent, filepath.Base(l.File), l.Line, src)
	}
}

// withSourceLines interleaves a JIT listing (lines "PC: insn" each followed
// by the native code, indented) with the function labels and C source lines
// that writeInsns shows before the same instructions.
func withSourceLines(listing string, info *programInfo) string {
	var b strings.Builder
	lastLine := ""
	for _, line := range strings.SplitAfter(listing, "\n") {
		head, _, ok := strings.Cut(line, ": ")
		pc, err := strconv.Atoi(head)
		if ok && err == nil && pc >= 0 {
			writeSourceHeader(&b, info, pc, &lastLine, "")
		}
		b.WriteString(line)
	}
	return b.String()
}

// annotate explains the instruction at pc: a jump's target pc, a helper's
// name, the map or variable an LD_IMM64 refers to.
func annotate(insns []asm.Instruction, pc int, info *programInfo) string {
	ins := insns[pc]
	op := ins.Op
	switch {
	case op == asm.OpCall && ins.Src == asm.PseudoHelper:
		if p := helpers.Lookup(helpers.ID(ins.Imm)); p != nil {
			return p.Name
		}
	case op == asm.OpCall && ins.Src == asm.PseudoCall:
		target := pc + 1 + int(ins.Imm)
		if info != nil {
			if f := info.prog.FuncAt(target); f != nil && f.Start == target {
				return fmt.Sprintf("-> %d (%s)", target, f.Name)
			}
		}
		return fmt.Sprintf("-> %d", target)
	case op == asm.OpJa32:
		return fmt.Sprintf("-> %d", pc+1+int(ins.Imm))
	case op.Class().IsJump() && op.JumpOp() != asm.JumpCall && op.JumpOp() != asm.JumpExit:
		return fmt.Sprintf("-> %d", pc+1+int(ins.Off))
	case ins.IsLdImm64() && info != nil && (ins.Src == asm.PseudoMapFD || ins.Src == asm.PseudoMapValue):
		maps := info.coll.Maps
		if ins.Imm < 0 || int(ins.Imm) >= len(maps) {
			return "map index out of range"
		}
		m := maps[ins.Imm]
		if ins.Src == asm.PseudoMapFD {
			return fmt.Sprintf("map %s", m.Name)
		}
		var off int32
		if pc+1 < len(insns) {
			off = insns[pc+1].Imm
		}
		for _, v := range info.coll.Variables {
			if v.Map == int(ins.Imm) && uint32(off) >= v.Offset && uint32(off) < v.Offset+max(v.Size, 1) {
				if uint32(off) == v.Offset {
					return fmt.Sprintf("&%s (%s%+d)", v.Name, m.Name, off)
				}
				return fmt.Sprintf("&%s+%d (%s%+d)", v.Name, uint32(off)-v.Offset, m.Name, off)
			}
		}
		return fmt.Sprintf("%s%+d", m.Name, off)
	}
	return ""
}

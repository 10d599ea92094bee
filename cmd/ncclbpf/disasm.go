package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/conformance"
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/plugin/config"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "disasm [--jit [--arch A] | --plain | --json] [--section S] [--raw] FILE",
		Summary: "disassemble an ELF object, a .data test or raw instruction bytes",
		Help: `FILE is one of:
  - an ELF object built by clang -target bpf: each program is printed with
    its C source lines interleaved (a line is shown where it changes), its
    functions labelled, and map, helper and jump targets annotated;
  - a .data conformance test: its "-- raw" words, else its "-- asm" text;
  - anything else: raw little-endian instruction bytes (8 per slot), as
    "ncclbpf asm -o" writes them; a file whose slots are not all known
    instructions is refused as not a program (--raw prints it anyway,
    unknown slots as ".insn 0x...");
  - "-" reads raw bytes from stdin.

Each instruction is printed as "PC: TEXT" in the uBPF assembler dialect
("ncclbpf asm" reads it back). --plain prints only the text, which
assembles back to exactly the same instructions.

--jit compiles each program with the JIT of this machine (x86-64 or AArch64) and prints, under each
instruction, the native code it compiled to (offset from the entry point,
bytes, Intel or GNU syntax), then the out-of-line code: common return path, unwind
and fault stubs, callx table. Maps and helpers get placeholder addresses:
the listing is for reading; the code never runs. --arch amd64 or arm64 shows
the other architecture's code on any machine (the AArch64 code of a Grace
host, from an x86-64 laptop).

--json prints every program as an object: section, name and its
instructions (pc, text, 64-bit words, annotation, source position).`,
		Examples: []string{
			"ncclbpf disasm policy.bpf.o",
			"ncclbpf disasm --section tuner policy.bpf.o  # one section only",
			"ncclbpf disasm --plain ../shared/conformance/bpf_conformance/lddw.data",
			"ncclbpf disasm prog.bin",
			"ncclbpf disasm --jit policy.bpf.o  # eBPF and native code side by side",
			"ncclbpf disasm --jit --arch arm64 policy.bpf.o  # the AArch64 code of a Grace host",
			"ncclbpf disasm --json policy.bpf.o | jq '.[0].insns | length'",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			var o disasmOptions
			fs.StringVar(&o.section, "section", "", "ELF objects: print only the programs of this `SECTION` (or with this name)")
			fs.BoolVar(&o.plain, "plain", false, "print only assembler text: no pc, annotations or source lines")
			fs.BoolVar(&o.raw, "raw", false, "raw bytes: print slots that are no known instruction as .insn instead of refusing the file")
			fs.BoolVar(&o.jit, "jit", false, "compile with this machine's JIT (x86-64 or AArch64) and print the native code under each instruction")
			fs.BoolVar(&o.json, "json", false, "print the programs and their instructions as JSON")
			fs.StringVar(&o.arch, "arch", "", "with --jit: the `ARCH` whose code to show, amd64 or arm64 (default: this machine's)")
			return func(e *env, args []string) error { return runDisasm(e, args, &o) }
		},
	})
}

// disasmOptions are the flags of disasm.
type disasmOptions struct {
	section, arch         string
	plain, raw, jit, json bool
}

func runDisasm(e *env, args []string, o *disasmOptions) error {
	section, plain, raw, jit := &o.section, &o.plain, &o.raw, &o.jit
	if *jit && (*plain || *raw || o.json) {
		return usageErrorf("--jit prints a listing: it does not go with --plain, --raw or --json")
	}
	if o.arch != "" && !*jit {
		return usageErrorf("--arch %s: the architecture of --jit's listing; add --jit", o.arch)
	}
	if o.arch != "" && o.arch != "amd64" && o.arch != "arm64" {
		return usageErrorf("--arch %q: want amd64 or arm64", o.arch)
	}
	if *plain && o.json {
		return usageErrorf("--plain and --json are two output formats: choose one")
	}
	if len(args) != 1 {
		return usageErrorf("want one FILE, got %d arguments", len(args))
	}
	data, err := readInput(args[0])
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("%s is empty: want an ELF object, a .data test or raw instruction bytes", args[0])
	}
	switch {
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		coll, err := loader.LoadBytes(data)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		if o.json {
			return disasmJSON(e, coll, *section)
		}
		return disasmCollection(e.Stdout, coll, *section, *plain, *jit, o.arch)
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
		if *jit {
			return writeJITListing(e.Stdout, args[0], insns, nil, o.arch)
		}
		if o.json {
			return writeJSON(e, []disasmProgram{{Name: args[0], Insns: listInsns(insns, nil)}})
		}
		writeInsns(e.Stdout, insns, nil, *plain)
		return nil
	}
	insns, err := asm.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: not an ELF object or .data file, and as raw instructions: %w", args[0], err)
	}
	if *jit {
		return writeJITListing(e.Stdout, args[0], insns, nil, o.arch)
	}
	if !*raw {
		for pc := 0; pc < len(insns); {
			text, width := asm.FormatAt(insns, pc)
			if strings.HasPrefix(text, ".insn ") {
				return fmt.Errorf("%s is not an ELF object or a .data test, and not raw instructions either: slot %d (%#016x) is no known eBPF instruction (--raw prints the bytes anyway)", args[0], pc, insns[pc].Word())
			}
			pc += width
		}
	}
	if o.json {
		return writeJSON(e, []disasmProgram{{Name: args[0], Insns: listInsns(insns, nil)}})
	}
	writeInsns(e.Stdout, insns, nil, *plain)
	return nil
}

// readInput reads a file, or stdin for "-".
func readInput(path string) ([]byte, error) {
	if path == "-" {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, config.MaxPolicyBytes+1))
		if err == nil && len(b) > config.MaxPolicyBytes {
			err = fmt.Errorf("stdin: more than %d bytes, the limit of a policy object", config.MaxPolicyBytes)
		}
		return b, err
	}
	return config.ReadRegularFile(path, config.MaxPolicyBytes)
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
			for _, f := range info.prog.Funcs {
				if f.Start == pc {
					fmt.Fprintf(w, "%s:\n", f.Name)
				}
			}
			if pc < len(info.prog.Lines) {
				if l := info.prog.Lines[pc]; l != nil {
					if key := fmt.Sprintf("%s:%d", l.File, l.Line); key != lastLine {
						lastLine = key
						src := l.Source
						if src == "" {
							src = "(no source text)"
						}
						fmt.Fprintf(w, "%*s  # %s:%d: %s\n", digits, "", filepath.Base(l.File), l.Line, src)
					}
				}
			}
		}
		if note := annotate(insns, pc, info); note != "" {
			text = fmt.Sprintf("%-32s # %s", text, note)
		}
		fmt.Fprintf(w, "%*d: %s\n", digits, pc, text)
		pc += width
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
			for _, f := range info.prog.Funcs {
				if f.Start == pc {
					fmt.Fprintf(&b, "%s:\n", f.Name)
				}
			}
			if pc < len(info.prog.Lines) {
				if l := info.prog.Lines[pc]; l != nil {
					if key := fmt.Sprintf("%s:%d", l.File, l.Line); key != lastLine {
						lastLine = key
						src := l.Source
						if src == "" {
							src = "(no source text)"
						}
						fmt.Fprintf(&b, "# %s:%d: %s\n", filepath.Base(l.File), l.Line, src)
					}
				}
			}
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

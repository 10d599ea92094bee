package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/conformance"
)

func init() {
	register(&command{
		Use:     "asm [-o OUT] [--json] FILE",
		Summary: "assemble uBPF-dialect assembler text into instructions",
		Help: `FILE is a .data conformance test (its "-- asm" section is assembled) or
a file of assembler text in the uBPF / bpf_conformance dialect, as
"ncclbpf disasm --plain" prints it; "-" reads the text from stdin.

Without -o, prints the instructions as 64-bit words, one a line, in the
format of a .data file's "-- raw" section. With -o, writes them to OUT as
raw little-endian bytes, which "ncclbpf disasm OUT" reads back.`,
		Examples: []string{
			"ncclbpf asm prog.s -o prog.bin",
			"ncclbpf asm ../shared/conformance/bpf_conformance/lddw.data  # print the words",
			"echo 'mov %r0, 1\nexit' | ncclbpf asm -",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			out := fs.StringP("output", "o", "", "write raw little-endian instruction bytes to this `FILE`")
			asJSON := fs.Bool("json", false, "print the instructions as JSON: words and their text")
			return func(e *env, args []string) error { return runAsm(e, args, *out, *asJSON) }
		},
	})
}

// asmInsn is one instruction of asm --json.
type asmInsn struct {
	PC    int      `json:"pc"`
	Words []string `json:"words"` // its 64-bit slots (two for lddw), 0x-prefixed hex
	Text  string   `json:"text"`
}

func runAsm(e *env, args []string, out string, asJSON bool) error {
	if len(args) != 1 {
		return usageErrorf("want one FILE, got %d arguments", len(args))
	}
	data, err := readInput(args[0])
	if err != nil {
		return err
	}
	var insns []asm.Instruction
	if strings.HasSuffix(args[0], ".data") {
		t, err := conformance.Parse(args[0], data)
		if err != nil {
			return err
		}
		if t.Asm == "" {
			return fmt.Errorf("%s has no \"-- asm\" section", args[0])
		}
		t.Raw = nil // assemble the text even where the file also has raw words
		if insns, err = t.Program(); err != nil {
			return err
		}
	} else {
		if err := checkText(args[0], data); err != nil {
			return err
		}
		if insns, err = asm.Assemble(string(data)); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
	}
	if len(insns) == 0 {
		return fmt.Errorf("%s holds no instructions: want assembler text such as \"mov %%r0, 1\" and \"exit\", one a line", args[0])
	}
	if out != "" {
		return os.WriteFile(out, asm.Encode(insns), 0o644)
	}
	if asJSON {
		list := []asmInsn{}
		for pc := 0; pc < len(insns); {
			text, width := asm.FormatAt(insns, pc)
			in := asmInsn{PC: pc, Text: text}
			for _, ins := range insns[pc:min(pc+width, len(insns))] {
				in.Words = append(in.Words, fmt.Sprintf("%#016x", ins.Word()))
			}
			list = append(list, in)
			pc += width
		}
		return writeJSON(e, list)
	}
	for _, ins := range insns {
		fmt.Fprintf(e.Stdout, "%#016x\n", ins.Word())
	}
	return nil
}

// checkText refuses input that is not assembler text (an ELF object, raw
// instruction bytes, anything binary) before the assembler quotes its
// "lines" back in error messages.
func checkText(name string, data []byte) error {
	if bytes.HasPrefix(data, []byte("\x7fELF")) {
		return fmt.Errorf("%s is an ELF object, not assembler text (\"ncclbpf disasm %s\" prints its instructions)", name, name)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("%s is not assembler text: byte %d is NUL (binary data; \"ncclbpf disasm\" reads raw instruction bytes)", name, i)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%s is not assembler text: it is not valid UTF-8 (binary data; \"ncclbpf disasm\" reads raw instruction bytes)", name)
	}
	return nil
}

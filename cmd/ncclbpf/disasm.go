package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/internal/disasm"
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
			var o disasm.Options
			fs.StringVar(&o.Section, "section", "", "ELF objects: print only the programs of this `SECTION` (or with this name)")
			fs.BoolVar(&o.Plain, "plain", false, "print only assembler text: no pc, annotations or source lines")
			fs.BoolVar(&o.Raw, "raw", false, "raw bytes: print slots that are no known instruction as .insn instead of refusing the file")
			fs.BoolVar(&o.JIT, "jit", false, "compile with this machine's JIT (x86-64 or AArch64) and print the native code under each instruction")
			fs.BoolVar(&o.JSON, "json", false, "print the programs and their instructions as JSON")
			fs.StringVar(&o.Arch, "arch", "", "with --jit: the `ARCH` whose code to show, amd64 or arm64 (default: this machine's)")
			return func(e *env, args []string) error { return runDisasm(e, args, &o) }
		},
	})
}

func runDisasm(e *env, args []string, o *disasm.Options) error {
	if o.JIT && (o.Plain || o.Raw || o.JSON) {
		return usageErrorf("--jit prints a listing: it does not go with --plain, --raw or --json")
	}
	if o.Arch != "" && !o.JIT {
		return usageErrorf("--arch %s: the architecture of --jit's listing; add --jit", o.Arch)
	}
	if o.Arch != "" && o.Arch != "amd64" && o.Arch != "arm64" {
		return usageErrorf("--arch %q: want amd64 or arm64", o.Arch)
	}
	if o.Plain && o.JSON {
		return usageErrorf("--plain and --json are two output formats: choose one")
	}
	if len(args) != 1 {
		return usageErrorf("want one FILE, got %d arguments", len(args))
	}
	data, err := readInput(args[0])
	if err != nil {
		return err
	}
	return disasm.Write(e.Stdout, args[0], data, o)
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

package disasm

import (
	"fmt"
	"io"

	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/loader"
)

// Program is one program of disasm --json.
type Program struct {
	Section string `json:"section,omitempty"`
	Name    string `json:"name"`
	Insns   []Insn `json:"insns"`
}

// Insn is one instruction of disasm --json: what the text listing
// shows on its line, with the source position it came from.
type Insn struct {
	PC       int      `json:"pc"`
	Text     string   `json:"text"`
	Words    []string `json:"words"` // its 64-bit slots (two for lddw), 0x-prefixed hex
	Note     string   `json:"note,omitempty"`
	Function string   `json:"function,omitempty"` // set on a function's first instruction
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Source   string   `json:"source,omitempty"`
}

// writeJSON prints the programs of coll (those of section, if given).
func writeJSON(w io.Writer, coll *loader.CollectionSpec, section string) error {
	progs, err := pickPrograms(coll, section)
	if err != nil {
		return err
	}
	out := make([]Program, 0, len(progs))
	for _, p := range progs {
		out = append(out, Program{Section: p.Section, Name: p.Name, Insns: listInsns(p.Insns, &programInfo{coll: coll, prog: p})})
	}
	return cli.WriteJSON(w, out)
}

// listInsns describes insns one instruction at a time.
func listInsns(insns []asm.Instruction, info *programInfo) []Insn {
	out := []Insn{}
	for pc := 0; pc < len(insns); {
		text, width := asm.FormatAt(insns, pc)
		in := Insn{PC: pc, Text: text, Note: annotate(insns, pc, info)}
		for _, ins := range insns[pc:min(pc+width, len(insns))] {
			in.Words = append(in.Words, fmt.Sprintf("%#016x", ins.Word()))
		}
		if info != nil {
			for _, f := range info.prog.Funcs {
				if f.Start == pc {
					in.Function = f.Name
				}
			}
			if pc < len(info.prog.Lines) {
				if l := info.prog.Lines[pc]; l != nil {
					in.File, in.Line, in.Source = l.File, l.Line, l.Source
				}
			}
		}
		out = append(out, in)
		pc += width
	}
	return out
}

package verifier

import (
	"fmt"
	"strings"
)

// Error is a verification failure (or, in Result.Warnings, a warning): what
// is wrong (Code), where (PC, the instruction, and the source position when
// Config.Source knows it) and why (Msg: the register or memory state that
// failed the check).
type Error struct {
	Code Code
	// PC is the instruction slot the check failed at.
	PC int
	// Insn is the instruction at PC, disassembled.
	Insn string
	// Msg says why, in one short paragraph.
	Msg string
	// File, Line, Col and Source locate PC in the C source, when
	// Config.Source returned a position for it (Line > 0).
	File   string
	Line   int
	Col    int
	Source string
	// Hint, when the error has no source position, says how to get one
	// (Config.NoSourceHint).
	Hint string
}

// Error returns "file.c:12:5: E012 null-deref: msg (pc 7: insn)", without
// the position prefix when none is known.
func (e *Error) Error() string {
	var b strings.Builder
	if pos := e.Pos(); pos != "" {
		b.WriteString(pos)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%v: %s (pc %d: %s)", e.Code, e.Msg, e.PC, e.Insn)
	if e.Hint != "" {
		fmt.Fprintf(&b, "; no source line: %s", e.Hint)
	}
	return b.String()
}

// Pos returns "file:line:col" (or "file:line"), or "" when no source
// position is known.
func (e *Error) Pos() string {
	if e.Line <= 0 {
		return ""
	}
	f := e.File
	if f == "" {
		f = "?"
	}
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d", f, e.Line, e.Col)
	}
	return fmt.Sprintf("%s:%d", f, e.Line)
}

// Explain returns the multi-line form the CLI prints:
//
//	file.c:12:5: E012 null-deref: <msg>
//	    <source line>
//	    pc 7: <insn>
func (e *Error) Explain() string {
	var b strings.Builder
	if pos := e.Pos(); pos != "" {
		b.WriteString(pos)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%v: %s\n", e.Code, e.Msg)
	if s := strings.TrimSpace(e.Source); s != "" {
		fmt.Fprintf(&b, "    %s\n", s)
	}
	fmt.Fprintf(&b, "    pc %d: %s\n", e.PC, e.Insn)
	if e.Hint != "" {
		fmt.Fprintf(&b, "    no source line: %s\n", e.Hint)
	}
	return b.String()
}

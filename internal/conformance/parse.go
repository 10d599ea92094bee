// Package conformance runs eBPF conformance tests written in the text format
// of the bpf_conformance project (and uBPF) on any vm.Engine.
//
// A test is one .data file made of "-- NAME" sections:
//
//	# comment lines, anywhere
//	-- asm
//	mov32 %r0, 1            the program, in the dialect of asm.Assemble
//	exit
//	-- raw                  optional: the program as 64-bit words, one a
//	0x00000001000000b4      line; it takes precedence over -- asm
//	0x0000000000000095
//	-- mem                  optional: input memory as hex bytes
//	00 01 02 03
//	-- result               the expected r0 (0x hex or decimal)
//	0x1
//	-- error                or: an error is expected instead of a result
//	division by zero
//
// Other sections ("-- c", "-- no register offset", "-- no jit", ...) are
// ignored. The program runs with r1 pointing to a copy of mem, r2 = len(mem)
// and the helper table of Helpers.
package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ncclbpf/ncclbpf/asm"
)

// Test is one parsed .data file.
type Test struct {
	// Name identifies the test in reports: the path it was read from.
	Name string
	// Asm is the text of the "-- asm" section; AsmLine is the line of the
	// file where it starts (1-based), so that assembler errors can be
	// reported with file line numbers.
	Asm     string
	AsmLine int
	// Raw holds the "-- raw" words as instructions; nil when the file has
	// no such section.
	Raw []asm.Instruction
	// Mem is the input memory, nil when the file has no "-- mem" section.
	Mem []byte
	// Result is the expected r0 when HasResult is set.
	Result    uint64
	HasResult bool
	// Error is the text of the "-- error" section when HasError is set:
	// the program must fail to assemble, compile or run. Runtimes word
	// their errors differently, so the text is informational. An expected
	// error takes precedence over a "-- result" in the same file (uBPF
	// gives both: the error, and the value its VM returns then).
	Error    string
	HasError bool
	// AsmOnly marks an assembler test: the file has "-- asm" and "-- raw"
	// and no expectation; the text must assemble to exactly the words.
	AsmOnly bool
}

// ParseError reports a malformed .data file.
type ParseError struct {
	Name string // the file
	Line int    // 1-based; 0 when the problem is not on one line
	Msg  string
}

// Error returns "name:line: msg" (or "name: msg").
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Msg)
}

// ParseFile reads and parses the .data file at path.
func ParseFile(path string) (*Test, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	return Parse(path, b)
}

// Parse parses the contents of a .data file; name is used in errors and as
// Test.Name. Errors are *ParseError values.
//
// Besides the sections listed in the package documentation, Parse reads
// two conventions of uBPF's tests: a section whose title ends in "@ FILE"
// ("-- asm @ prog.asm", "-- mem @ packet.hex") takes its content from FILE,
// relative to the folder of name; and a file with "-- asm" and "-- raw" but
// no expectation is an assembler test (Test.AsmOnly).
func Parse(name string, data []byte) (*Test, error) {
	t := &Test{Name: name}
	fail := func(line int, format string, args ...any) (*Test, error) {
		return nil, &ParseError{Name: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	type section struct {
		line  int // file line of the first content line (0: included file)
		lines []string
	}
	sections := map[string]*section{}
	var cur *section
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		title, ok := strings.CutPrefix(line, "--")
		if !ok || (title != "" && title[0] != ' ') {
			if cur != nil {
				cur.lines = append(cur.lines, line)
			}
			continue
		}
		title = strings.TrimSuffix(strings.TrimSpace(title), " (optional)")
		cur = &section{line: i + 2}
		if base, file, ok := strings.Cut(title, " @ "); ok {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(name), strings.TrimSpace(file)))
			if err != nil {
				return fail(i+1, "section %q: %v", title, err)
			}
			title = strings.TrimSpace(base)
			cur.line, cur.lines = 0, strings.Split(string(b), "\n")
		}
		if _, dup := sections[title]; dup {
			return fail(i+1, "section %q appears twice", title)
		}
		sections[title] = cur
	}
	// content returns the section's lines without comments and blank lines,
	// with their file line numbers.
	content := func(s *section) (out []string, at []int) {
		for j, l := range s.lines {
			if k := strings.IndexByte(l, '#'); k >= 0 {
				l = l[:k]
			}
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
				at = append(at, s.line+j)
			}
		}
		return out, at
	}
	lineOf := func(at []int, j int) int {
		if at[j] < 2 { // from an included file
			return 0
		}
		return at[j]
	}

	if s, ok := sections["asm"]; ok {
		t.Asm, t.AsmLine = strings.Join(s.lines, "\n"), max(s.line, 1)
	}
	if s, ok := sections["raw"]; ok {
		words, at := content(s)
		for j, w := range words {
			v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(w), "0x"), 16, 64)
			if err != nil {
				return fail(lineOf(at, j), "raw section: %q is not a 64-bit hex word", w)
			}
			t.Raw = append(t.Raw, asm.DecodeOne(v))
		}
		if t.Raw == nil {
			return fail(max(s.line-1, 0), "raw section is empty")
		}
	}
	if s, ok := sections["mem"]; ok {
		t.Mem = []byte{}
		rows, at := content(s)
		for j, row := range rows {
			for _, f := range strings.Fields(row) {
				v, err := strconv.ParseUint(f, 16, 8)
				if err != nil {
					return fail(lineOf(at, j), "mem section: %q is not a hex byte", f)
				}
				t.Mem = append(t.Mem, byte(v))
			}
		}
	}
	if s, ok := sections["result"]; ok {
		rows, at := content(s)
		if len(rows) != 1 {
			return fail(max(s.line-1, 0), "result section: want one value, got %d lines", len(rows))
		}
		v, err := parseValue(rows[0])
		if err != nil {
			return fail(lineOf(at, 0), "result section: %v", err)
		}
		t.Result, t.HasResult = v, true
	}
	for _, title := range []string{"error", "error pattern"} {
		if s, ok := sections[title]; ok {
			t.Error, t.HasError = strings.TrimSpace(strings.Join(s.lines, "\n")), true
		}
	}
	switch {
	case t.Asm == "" && t.Raw == nil:
		return fail(0, "no program: want an \"-- asm\" or \"-- raw\" section")
	case !t.HasResult && !t.HasError && t.Asm != "" && t.Raw != nil:
		t.AsmOnly = true
	case !t.HasResult && !t.HasError:
		return fail(0, "no expectation: want a \"-- result\" or \"-- error\" section")
	}
	return t, nil
}

// parseValue parses an expected r0: 0x hex (up to 64 bits) or decimal,
// possibly negative (two's complement).
func parseValue(s string) (uint64, error) {
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a 64-bit hex value", s)
		}
		return v, nil
	}
	if strings.HasPrefix(s, "-") {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a 64-bit value", s)
		}
		return uint64(v), nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 64-bit value", s)
	}
	return v, nil
}

// Program returns the test's instructions: the raw words if the file has
// them, else its assembled text. Assembler errors carry file line numbers.
func (t *Test) Program() ([]asm.Instruction, error) {
	if t.Raw != nil {
		return append([]asm.Instruction(nil), t.Raw...), nil
	}
	return t.Assemble()
}

// Assemble assembles the "-- asm" section. Errors carry file line numbers.
func (t *Test) Assemble() ([]asm.Instruction, error) {
	// Pad with empty lines so that the assembler's line numbers are the
	// file's.
	insns, err := asm.Assemble(strings.Repeat("\n", max(t.AsmLine-1, 0)) + t.Asm)
	if err != nil {
		return nil, fmt.Errorf("assemble %s: %w", filepath.Base(t.Name), err)
	}
	return insns, nil
}

package offline

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/verifier"
)

// What ncclbpf verify reports, and the verification that run does before
// it runs a program.

// Verify verifies every program of the object at path (a file or
// builtin:NAME) as the plugin would load it, each against its section's
// hook or the hook called hookName, and prints the verdicts of those in
// section ("" for all) to w: text, or with asJSON one object per program.
// It returns cli.ErrReported when a program failed.
func Verify(w io.Writer, path, sectionName, hookName string, asJSON bool) error {
	section := &sectionName
	var forced *hook.Hook
	if hookName != "" {
		if forced = hook.Get(hookName); forced == nil {
			var names []string
			for _, h := range hook.All() {
				names = append(names, h.Name)
			}
			return cli.Usagef("unknown hook %q; hooks: %s", hookName, strings.Join(names, ", "))
		}
	}
	obj, err := ReadObject(path)
	if err != nil {
		return err
	}
	coll, err := loader.LoadBytes(obj)
	if err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	var reports []*VerifyReport
	var names []string
	outcomes := verifyAll(coll, forced)
	for i, p := range coll.Programs {
		names = append(names, fmt.Sprintf("%s (%s)", p.Section, p.Name))
		if *section != "" && p.Section != *section && p.Name != *section {
			continue
		}
		reports = append(reports, outcomes[i])
	}
	if len(reports) == 0 {
		if *section == "" {
			return errors.New(path + ": the object has no programs")
		}
		return fmt.Errorf("%s: no program in section %q; the object has: %s", path, *section, strings.Join(names, ", "))
	}
	failed := 0
	for _, r := range reports {
		if !r.OK {
			failed++
		}
	}
	if asJSON {
		if err := cli.WriteJSON(w, reports); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			writeVerdict(w, r)
		}
		fmt.Fprintf(w, "%d passed, %d failed\n", len(reports)-failed, failed)
	}
	if failed > 0 {
		return cli.ErrReported
	}
	return nil
}

// VerifyReport is the --json form of one program's verdict.
type VerifyReport struct {
	Program  string          `json:"program"`
	Section  string          `json:"section"`
	Hook     string          `json:"hook,omitempty"`
	Insns    int             `json:"insns"`
	OK       bool            `json:"ok"`
	Visits   int             `json:"visits,omitempty"`
	Error    *VerifyProblem  `json:"error,omitempty"`
	Warnings []VerifyProblem `json:"warnings,omitempty"`
}

// VerifyProblem is a rejection or a warning of the verifier, with where in
// the program and the C source it is.
type VerifyProblem struct {
	Code   string `json:"code"` // "E012"
	Name   string `json:"name"` // "null-deref"
	PC     int    `json:"pc"`
	Insn   string `json:"insn,omitempty"`
	Msg    string `json:"msg"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Col    int    `json:"col,omitempty"`
	Source string `json:"source,omitempty"`
	Hint   string `json:"hint,omitempty"` // no source position: how to get one
}

func problem(e *verifier.Error) *VerifyProblem {
	return &VerifyProblem{Code: e.Code.String()[:4], Name: e.Code.Name(), PC: e.PC, Insn: e.Insn, Msg: e.Msg,
		File: e.File, Line: e.Line, Col: e.Col, Source: e.Source, Hint: e.Hint}
}

// verifyTogether verifies the programs of coll together, as the plugin loads
// them (a map one program writes is rank-local for all), each against the
// hook hookOf gives it; a program without a hook is left out (hookErrs).
func verifyTogether(coll *loader.CollectionSpec, hookOf func(*loader.ProgramSpec) (*hook.Hook, error)) (hooks []*hook.Hook, hookErrs, errs []error, results []*verifier.Result) {
	n := len(coll.Programs)
	hooks, hookErrs = make([]*hook.Hook, n), make([]error, n)
	for i, p := range coll.Programs {
		if hooks[i], hookErrs[i] = hookOf(p); hookErrs[i] != nil {
			hooks[i] = nil
		}
	}
	results, errs, _ = verifier.VerifyCollection(coll, hooks)
	return hooks, hookErrs, errs, results
}

// verifyAll verifies every program of coll together and reports each.
func verifyAll(coll *loader.CollectionSpec, forced *hook.Hook) []*VerifyReport {
	hooks, hookErrs, errs, results := verifyTogether(coll, func(p *loader.ProgramSpec) (*hook.Hook, error) {
		if forced != nil {
			return forced, nil
		}
		return hook.ForSection(p.Section)
	})
	reports := make([]*VerifyReport, len(coll.Programs))
	for i, p := range coll.Programs {
		r := &VerifyReport{Program: p.Name, Section: p.Section, Insns: len(p.Insns)}
		reports[i] = r
		if hookErrs[i] != nil {
			r.Error = &VerifyProblem{Code: "-", Name: "no-hook", PC: -1, Msg: hookErrs[i].Error()}
			continue
		}
		r.Hook = hooks[i].Name
		fillReport(r, results[i], errs[i])
	}
	return reports
}

// verifyInBundle verifies program p against hook h together with the other
// programs of coll, as the plugin would load them.
func verifyInBundle(coll *loader.CollectionSpec, p *loader.ProgramSpec, h *hook.Hook) error {
	_, _, errs, _ := verifyTogether(coll, func(q *loader.ProgramSpec) (*hook.Hook, error) {
		if q == p {
			return h, nil
		}
		return hook.ForSection(q.Section)
	})
	for i, q := range coll.Programs {
		if q == p {
			return errs[i]
		}
	}
	return nil
}

func fillReport(r *VerifyReport, res *verifier.Result, err error) {
	var ve *verifier.Error
	switch {
	case err == nil:
		r.OK, r.Visits = true, res.Visits
		for _, w := range res.Warnings {
			r.Warnings = append(r.Warnings, *problem(w))
		}
	case errors.As(err, &ve):
		r.Error = problem(ve)
	default:
		r.Error = &VerifyProblem{Code: "-", Name: "error", PC: -1, Msg: err.Error()}
	}
}

func writeVerdict(w io.Writer, r *VerifyReport) {
	if r.OK {
		fmt.Fprintf(w, "PASS %s (%s, hook %s): %d instructions\n", r.Program, r.Section, r.Hook, r.Insns)
		for _, x := range r.Warnings {
			writeProblem(w, &x)
		}
		return
	}
	fmt.Fprintf(w, "FAIL %s (%s", r.Program, r.Section)
	if r.Hook != "" {
		fmt.Fprintf(w, ", hook %s", r.Hook)
	}
	fmt.Fprintln(w, "):")
	writeProblem(w, r.Error)
}

// writeProblem prints "file:line:col: E012 null-deref: msg", the source
// line and "pc N: insn", as verifier.Error.Explain does.
func writeProblem(w io.Writer, p *VerifyProblem) {
	if p.PC < 0 {
		fmt.Fprintf(w, "  %s\n", p.Msg)
		return
	}
	pos := ""
	if p.Line > 0 {
		pos = fmt.Sprintf("%s:%d:", p.File, p.Line)
		if p.Col > 0 {
			pos += fmt.Sprintf("%d:", p.Col)
		}
		pos += " "
	}
	fmt.Fprintf(w, "  %s%s %s: %s\n", pos, p.Code, p.Name, p.Msg)
	if s := strings.TrimSpace(p.Source); s != "" {
		fmt.Fprintf(w, "      %s\n", s)
	}
	fmt.Fprintf(w, "      pc %d: %s\n", p.PC, p.Insn)
	if p.Hint != "" {
		fmt.Fprintf(w, "      no source line: %s\n", p.Hint)
	}
}

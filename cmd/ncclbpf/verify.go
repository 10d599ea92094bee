package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
	"github.com/ncclbpf/ncclbpf/verifier"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "verify [--section S] [--hook NAME] [--json] OBJ",
		Summary: "check that an object file's programs are safe for their hooks",
		Help: `Each program of OBJ is verified against the hook its ELF section attaches
to (or the hook named by --hook): memory safety on the stack, map values,
ringbuf records and the hook's context fields, null checks, termination,
allowed helpers and their arguments, and the hook's return range.

A rejection is printed as one short paragraph: the C source position, the
stable error code and why, the source line, and the instruction:

  policy.c:12:9: E012 null-deref: read through r0, which may be null ...
      return *v & 1;
      pc 7: ldxdw %r0, [%r0]

Warnings (W100 div-by-zero) do not fail the program. --json prints one
object per program instead. Exit status: 0 when every program passes, 1
otherwise. The error codes are explained in docs/error-codes.md.`,
		Examples: []string{
			"ncclbpf verify policy.bpf.o",
			"ncclbpf verify --section tuner policy.bpf.o  # one section only",
			"ncclbpf verify --hook tuner --json policy.bpf.o",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			section := fs.String("section", "", "verify only the programs of this `SECTION` (or with this name)")
			hookName := fs.String("hook", "", "verify against this `HOOK` instead of the one the section selects")
			asJSON := fs.Bool("json", false, "print one JSON object per program")
			return func(e *env, args []string) error { return runVerify(e, args, *section, *hookName, *asJSON) }
		},
	})
}

// verifyReport is the --json form of one program's verdict.
type verifyReport struct {
	Program  string          `json:"program"`
	Section  string          `json:"section"`
	Hook     string          `json:"hook,omitempty"`
	Insns    int             `json:"insns"`
	OK       bool            `json:"ok"`
	Visits   int             `json:"visits,omitempty"`
	Error    *verifyProblem  `json:"error,omitempty"`
	Warnings []verifyProblem `json:"warnings,omitempty"`
}

type verifyProblem struct {
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

func problem(e *verifier.Error) *verifyProblem {
	return &verifyProblem{Code: e.Code.String()[:4], Name: e.Code.Name(), PC: e.PC, Insn: e.Insn, Msg: e.Msg,
		File: e.File, Line: e.Line, Col: e.Col, Source: e.Source, Hint: e.Hint}
}

func runVerify(e *env, args []string, sectionName, hookArg string, jsonOut bool) error {
	section, hookName, asJSON := &sectionName, &hookArg, &jsonOut
	if len(args) != 1 {
		return usageErrorf("want one object file, got %d arguments", len(args))
	}
	var forced *hook.Hook
	if *hookName != "" {
		if forced = hook.Get(*hookName); forced == nil {
			var names []string
			for _, h := range hook.All() {
				names = append(names, h.Name)
			}
			return usageErrorf("unknown hook %q; hooks: %s", *hookName, strings.Join(names, ", "))
		}
	}
	obj, err := readObject(args[0])
	if err != nil {
		return err
	}
	coll, err := loader.LoadBytes(obj)
	if err != nil {
		return fmt.Errorf("load %s: %w", args[0], err)
	}
	var reports []*verifyReport
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
			return errors.New(args[0] + ": the object has no programs")
		}
		return fmt.Errorf("%s: no program in section %q; the object has: %s", args[0], *section, strings.Join(names, ", "))
	}
	failed := 0
	for _, r := range reports {
		if !r.OK {
			failed++
		}
	}
	if *asJSON {
		if err := writeJSON(e, reports); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			writeVerdict(e.Stdout, r)
		}
		fmt.Fprintf(e.Stdout, "%d passed, %d failed\n", len(reports)-failed, failed)
	}
	if failed > 0 {
		return errSilentFailure
	}
	return nil
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
func verifyAll(coll *loader.CollectionSpec, forced *hook.Hook) []*verifyReport {
	hooks, hookErrs, errs, results := verifyTogether(coll, func(p *loader.ProgramSpec) (*hook.Hook, error) {
		if forced != nil {
			return forced, nil
		}
		return hook.ForSection(p.Section)
	})
	reports := make([]*verifyReport, len(coll.Programs))
	for i, p := range coll.Programs {
		r := &verifyReport{Program: p.Name, Section: p.Section, Insns: len(p.Insns)}
		reports[i] = r
		if hookErrs[i] != nil {
			r.Error = &verifyProblem{Code: "-", Name: "no-hook", PC: -1, Msg: hookErrs[i].Error()}
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

func fillReport(r *verifyReport, res *verifier.Result, err error) {
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
		r.Error = &verifyProblem{Code: "-", Name: "error", PC: -1, Msg: err.Error()}
	}
}

func writeVerdict(w io.Writer, r *verifyReport) {
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
func writeProblem(w io.Writer, p *verifyProblem) {
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

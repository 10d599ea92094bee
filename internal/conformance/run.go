package conformance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ncclbpf/ncclbpf/vm"
)

// Result is the outcome of one test on one engine.
type Result struct {
	// Name is the test's name (its path when read from a folder).
	Name string
	// Passed reports whether the engine did what the test expects.
	Passed bool
	// Detail explains a failure ("r0 = 0x2, want 0x1", or the error with
	// the stage that produced it); empty when the test passed.
	Detail string
	// Got is the r0 the program returned, when it ran to completion.
	Got    uint64
	HasGot bool
	// Err is the error the test met, if any: reading or parsing the file,
	// assembling, compiling or running. It is set also when an error was
	// expected (and the test passed).
	Err error
}

// String returns "PASS name" or "FAIL name: detail".
func (r Result) String() string {
	if r.Passed {
		return "PASS " + r.Name
	}
	// a detail of several lines (assembler errors) stays one indented block
	return "FAIL " + r.Name + ": " + strings.ReplaceAll(strings.TrimRight(r.Detail, "\n"), "\n", "\n    ")
}

// Run assembles t, compiles it with engine (helper table: Helpers), runs it
// on a copy of t.Mem and compares r0 with the expected result, or checks
// that some stage failed when the test expects an error. A panic in the
// engine is reported as a failure, not propagated. A program compiled to
// native code (vm.NativeExecutable) runs natively only if it runs without
// fault on the reference interpreter: native code is not bounds-checked,
// and a faulting program would crash the process.
func Run(engine vm.Engine, t *Test) (res Result) {
	res = Result{Name: t.Name}
	fail := func(stage string, err error) Result {
		res.Err = err
		if t.HasError {
			res.Passed = true
			return res
		}
		res.Detail = fmt.Sprintf("%s: %v", stage, err)
		return res
	}
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("engine %s panicked: %v", engine.Name(), p)
			res = Result{Name: t.Name, Detail: err.Error(), Err: err}
		}
	}()

	if t.AsmOnly {
		return checkAssembly(t)
	}
	insns, err := t.Program()
	if err != nil {
		return fail("assemble", err)
	}
	prog := &vm.Program{Name: filepath.Base(t.Name), Insns: insns, Helpers: Helpers()}
	exe, err := engine.Compile(prog)
	if err != nil {
		return fail("compile ("+engine.Name()+")", err)
	}
	defer func() {
		if err := exe.Close(); err != nil && res.Passed {
			res.Passed, res.Err = false, err
			res.Detail = fmt.Sprintf("close (%s): %v", engine.Name(), err)
		}
	}()
	if _, native := exe.(vm.NativeExecutable); native {
		// Native code has no bounds checks: a program that faults would
		// take the whole process down. Run it on the reference interpreter
		// first and only run it natively if that completes.
		if err := interpretFirst(prog, t.Mem); err != nil {
			return fail("not run on "+engine.Name()+": the reference interpreter rejects it or faults", err)
		}
	}
	mem := append([]byte(nil), t.Mem...)
	r0, err := exe.Run(mem)
	if err != nil {
		return fail("run ("+engine.Name()+")", err)
	}
	res.Got, res.HasGot = r0, true
	switch {
	case t.HasError:
		res.Detail = fmt.Sprintf("r0 = %#x, want an error (%s)", r0, oneLine(t.Error))
	case r0 != t.Result:
		res.Detail = fmt.Sprintf("r0 = %#x, want %#x", r0, t.Result)
	default:
		res.Passed = true
	}
	return res
}

// interpretFirst runs prog on the reference interpreter and returns its
// compile or run error.
func interpretFirst(prog *vm.Program, mem []byte) error {
	exe, err := vm.NewInterpreter().Compile(prog)
	if err != nil {
		return err
	}
	defer exe.Close()
	_, err = exe.Run(append([]byte(nil), mem...))
	return err
}

// checkAssembly runs an assembler test: the text must give the raw words.
func checkAssembly(t *Test) Result {
	res := Result{Name: t.Name}
	insns, err := t.Assemble()
	if err != nil {
		res.Err, res.Detail = err, "assemble: "+err.Error()
		return res
	}
	for pc := 0; pc < max(len(insns), len(t.Raw)); pc++ {
		switch {
		case pc >= len(insns):
			res.Detail = fmt.Sprintf("assembly has %d slots, raw section %d", len(insns), len(t.Raw))
		case pc >= len(t.Raw):
			res.Detail = fmt.Sprintf("assembly has %d slots, raw section %d", len(insns), len(t.Raw))
		case insns[pc] != t.Raw[pc]:
			res.Detail = fmt.Sprintf("slot %d assembles to %#016x, raw section has %#016x", pc, insns[pc].Word(), t.Raw[pc].Word())
		default:
			continue
		}
		return res
	}
	res.Passed = true
	return res
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "any error"
	}
	return s
}

// RunDir runs every *.data file found under the given paths (folders are
// walked recursively; a path may also name one .data file) in lexical
// order, and returns one Result per file. A file that cannot be read or
// parsed gives a failed Result. The error reports a path that does not
// exist or cannot be walked, or a folder without any .data file.
func RunDir(engine vm.Engine, paths ...string) ([]Result, error) {
	files, err := findTests(paths)
	if err != nil {
		return nil, err
	}
	results := make([]Result, 0, len(files))
	for _, f := range files {
		t, err := ParseFile(f)
		if err != nil {
			detail := "parse: " + err.Error()
			var pe *ParseError
			if errors.As(err, &pe) && pe.Line > 0 {
				detail = fmt.Sprintf("parse: line %d: %s", pe.Line, pe.Msg)
			} else if errors.As(err, &pe) {
				detail = "parse: " + pe.Msg
			}
			results = append(results, Result{Name: f, Detail: detail, Err: err})
			continue
		}
		results = append(results, Run(engine, t))
	}
	return results, nil
}

// findTests lists the .data files under paths.
func findTests(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("conformance: no folder given")
	}
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		n := len(files)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".data") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("conformance: walking %s: %w", p, err)
		}
		if len(files) == n {
			return nil, fmt.Errorf("conformance: no .data files under %s", p)
		}
		sort.Strings(files[n:])
	}
	return files, nil
}

// Summary counts passed and failed results.
func Summary(results []Result) (passed, failed int) {
	for _, r := range results {
		if r.Passed {
			passed++
		} else {
			failed++
		}
	}
	return passed, failed
}

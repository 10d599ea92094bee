package main

import (
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/internal/conformance"
	"github.com/ncclbpf/ncclbpf/vm"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "conformance [--engine NAME[,NAME...]|all] [-v] [--json] PATH...",
		Summary: "run bpf_conformance .data tests on an engine",
		Help: `Runs every *.data test found under each PATH (folders are searched
recursively; a PATH may also be one .data file). A test assembles its
"-- asm" section (or takes its "-- raw" words), runs the program on a copy
of its "-- mem" bytes and compares r0 with "-- result", or expects an error
when the file has "-- error". Helper 5 is the suite's "unwind" helper.

Prints one line per failed test with the reason, then "N passed, M failed".
Exits 1 when a test failed. With several engines (a comma-separated list,
or "all"), each line names its engine, a summary line per engine comes
before the total. --json prints one object per test and engine instead.`,
		Examples: []string{
			"ncclbpf conformance --engine interp ../shared/conformance/bpf_conformance",
			"ncclbpf conformance --engine jit -v tests/lddw.data  # one file, print passes too",
			"ncclbpf conformance --engine all ../shared/conformance/bpf_conformance  # every engine",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			engineName := fs.String("engine", defaultEngine, "`ENGINE`s to run the tests on, comma-separated, or all: "+strings.Join(engineNames(), ", "))
			verbose := fs.BoolP("verbose", "v", false, "also print a line for each passed test")
			asJSON := fs.Bool("json", false, "print one JSON object per test and engine: test, engine, passed, detail")
			return func(e *env, paths []string) error { return runConformance(e, paths, *engineName, *verbose, *asJSON) }
		},
	})
}

// conformanceResult is one test's outcome on one engine, for --json.
type conformanceResult struct {
	Test   string `json:"test"`
	Engine string `json:"engine"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"` // why it failed
}

func runConformance(e *env, paths []string, engineName string, verbose, asJSON bool) error {
	if len(paths) == 0 {
		return usageErrorf("want at least one folder or .data file")
	}
	names := strings.Split(engineName, ",")
	if engineName == "all" {
		names = engineNames()
	}
	var engines []vm.Engine
	for _, n := range names {
		engine, err := newEngine(strings.TrimSpace(n))
		if err != nil {
			return err
		}
		engines = append(engines, engine)
	}
	totalPassed, totalFailed := 0, 0
	list := []conformanceResult{}
	for _, engine := range engines {
		results, err := conformance.RunDir(engine, paths...)
		if err != nil {
			return err
		}
		prefix := ""
		if len(engines) > 1 {
			prefix = "[" + engine.Name() + "] "
		}
		passed, failed := conformance.Summary(results)
		totalPassed += passed
		totalFailed += failed
		if asJSON {
			for _, r := range results {
				list = append(list, conformanceResult{Test: r.Name, Engine: engine.Name(), Passed: r.Passed, Detail: r.Detail})
			}
			continue
		}
		for _, r := range results {
			if !r.Passed || verbose {
				fmt.Fprintln(e.Stdout, prefix+r.String())
			}
		}
		if len(engines) > 1 {
			fmt.Fprintf(e.Stdout, "%s: %d passed, %d failed\n", engine.Name(), passed, failed)
		}
	}
	if asJSON {
		if err := writeJSON(e, list); err != nil {
			return err
		}
		if totalFailed > 0 {
			return errSilentFailure
		}
		return nil
	}
	fmt.Fprintf(e.Stdout, "%d passed, %d failed\n", totalPassed, totalFailed)
	if totalFailed > 0 {
		return errSilentFailure
	}
	return nil
}

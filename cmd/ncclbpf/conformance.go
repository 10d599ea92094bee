package main

import (
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/conformance"
	"github.com/ncclbpf/ncclbpf/vm"
)

func init() {
	register(&command{
		Name:    "conformance",
		Args:    "[--engine NAME[,NAME...]|all] [-v] PATH...",
		Summary: "run bpf_conformance .data tests on an engine",
		Help: `Runs every *.data test found under each PATH (folders are searched
recursively; a PATH may also be one .data file). A test assembles its
"-- asm" section (or takes its "-- raw" words), runs the program on a copy
of its "-- mem" bytes and compares r0 with "-- result", or expects an error
when the file has "-- error". Helper 5 is the suite's "unwind" helper.

Prints one line per failed test with the reason, then "N passed, M failed".
Exits 1 when a test failed. With several engines (a comma-separated list,
or "all"), each line names its engine, a summary line per engine comes
before the total.`,
		Examples: []string{
			"ncclbpf conformance --engine interp ../shared/conformance/bpf_conformance",
			"ncclbpf conformance --engine jit -v tests/lddw.data  # one file, print passes too",
			"ncclbpf conformance --engine all ../shared/conformance/bpf_conformance  # every engine",
		},
		Run: runConformance,
	})
}

func runConformance(e *env, args []string) error {
	fs := e.flags()
	engineName := fs.String("engine", defaultEngine, "engine(s) to run the tests on, comma-separated, or all: "+strings.Join(engineNames(), ", "))
	verbose := fs.Bool("v", false, "also print a line for each passed test")
	paths, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageErrorf("want at least one folder or .data file")
	}
	names := strings.Split(*engineName, ",")
	if *engineName == "all" {
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
	for _, engine := range engines {
		results, err := conformance.RunDir(engine, paths...)
		if err != nil {
			return err
		}
		prefix := ""
		if len(engines) > 1 {
			prefix = "[" + engine.Name() + "] "
		}
		for _, r := range results {
			if !r.Passed || *verbose {
				fmt.Fprintln(e.Stdout, prefix+r.String())
			}
		}
		passed, failed := conformance.Summary(results)
		if len(engines) > 1 {
			fmt.Fprintf(e.Stdout, "%s: %d passed, %d failed\n", engine.Name(), passed, failed)
		}
		totalPassed += passed
		totalFailed += failed
	}
	fmt.Fprintf(e.Stdout, "%d passed, %d failed\n", totalPassed, totalFailed)
	if totalFailed > 0 {
		return errSilentFailure
	}
	return nil
}

package main

import (
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/conformance"
)

func init() {
	register(&command{
		Name:    "conformance",
		Args:    "[--engine NAME] [-v] PATH...",
		Summary: "run bpf_conformance .data tests on an engine",
		Help: `Runs every *.data test found under each PATH (folders are searched
recursively; a PATH may also be one .data file). A test assembles its
"-- asm" section (or takes its "-- raw" words), runs the program on a copy
of its "-- mem" bytes and compares r0 with "-- result", or expects an error
when the file has "-- error". Helper 5 is the suite's "unwind" helper.

Prints one line per failed test with the reason, then "N passed, M failed".
Exits 1 when a test failed.`,
		Examples: []string{
			"ncclbpf conformance --engine interp ../shared/conformance/bpf_conformance",
			"ncclbpf conformance --engine jit -v tests/lddw.data  # one file, print passes too",
		},
		Run: runConformance,
	})
}

func runConformance(e *env, args []string) error {
	fs := e.flags()
	engineName := fs.String("engine", defaultEngine, "engine to run the tests on: "+strings.Join(engineNames(), ", "))
	verbose := fs.Bool("v", false, "also print a line for each passed test")
	paths, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageErrorf("want at least one folder or .data file")
	}
	engine, err := newEngine(*engineName)
	if err != nil {
		return err
	}
	results, err := conformance.RunDir(engine, paths...)
	if err != nil {
		return err
	}
	for _, r := range results {
		if !r.Passed || *verbose {
			fmt.Fprintln(e.Stdout, r.String())
		}
	}
	passed, failed := conformance.Summary(results)
	fmt.Fprintf(e.Stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return errSilentFailure
	}
	return nil
}

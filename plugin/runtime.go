package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// The Go runtime lives inside every rank of a training job. Left to
// itself it sizes its scheduler to the machine (GOMAXPROCS = the CPUs, 64
// or more on a large node) and keeps every thread it ever started; the
// plugin's Go code is a control plane that needs little. NCCLBPF_GOMAXPROCS
// (default 2) caps the threads running Go code at once; with the threads
// the runtime keeps for itself and those blocked in system calls, the
// count stays under a fixed bound whatever the load (BENCHMARKS.md,
// "Footprint").

const envGoMaxProcs = "NCCLBPF_GOMAXPROCS"

// defaultGoMaxProcs is enough for loading a policy while the control
// server answers.
const defaultGoMaxProcs = 2

func init() {
	n, warn := parseGoMaxProcs(cGetenv(envGoMaxProcs))
	if warn != "" {
		fmt.Fprintln(os.Stderr, warn)
	}
	runtime.GOMAXPROCS(n)
}

func parseGoMaxProcs(v string) (int, string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultGoMaxProcs, ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		return defaultGoMaxProcs, fmt.Sprintf("ncclbpf: %s=%q is not a number within 1..64; using %d", envGoMaxProcs, v, defaultGoMaxProcs)
	}
	return n, ""
}

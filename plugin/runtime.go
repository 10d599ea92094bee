package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// The Go runtime lives inside every rank of a training job. Left to
// itself it sizes its scheduler to the machine (GOMAXPROCS = the CPUs, 64
// or more on a large node) and keeps every thread it ever started; the
// plugin's Go code is a control plane that needs little. NCCLBPF_GOMAXPROCS
// (default 2) caps the threads running Go code at once; with the threads
// the runtime keeps for itself and those blocked in system calls, the
// count stays under a fixed bound whatever the load (BENCHMARKS.md,
// "Footprint").

func init() {
	n, warn := envconfig.ParseGoMaxProcs(cGetenv(envconfig.GoMaxProcs))
	if warn != "" {
		fmt.Fprintln(os.Stderr, warn)
	}
	runtime.GOMAXPROCS(n)
}

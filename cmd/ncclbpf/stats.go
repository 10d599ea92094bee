package main

import (
	"github.com/ncclbpf/ncclbpf/internal/ctl"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "stats [--dir DIR] [--json] [--cost D] PID",
		Summary: "show a process's policy, hook call counts, guardrail hits and reloads",
		Help: `The counters come from the C shim (relaxed per-communicator counters,
summed on request) and from the reload machinery of the process:

  tuner      getCollInfo calls, those that ran a program, decisions applied,
             rejected (NCCL could not take them: guardrail) and clamped
             channel counts; getChunkSize the same; the range of
             per-communicator call sequences (for reload --at-seq); per
             communicator, the digest of its decisions through a call
             (compare processes with 'ncclbpf check')
  profiler   program calls per profiler hook, events dropped or forced
  reload     reloads, failures and the last error, publish and grace-period
             times, bundles alive, what rollback would load
  cost       with --cost D: each hook's program wrapped in a timing
             trampoline for D (1 call in 64 per thread timed), then put back;
             nothing is timed otherwise`,
		Examples: []string{"ncclbpf stats 4242", "ncclbpf stats --json 4242", "ncclbpf stats --cost 1s 4242  # also time each hook's program"},
		Complete: func([]string) []string { return controlNames() },
		Setup: func(fs *pflag.FlagSet) runFunc {
			dir, asJSON := controlFlags(fs)
			cost := fs.Duration("cost", 0, "first time each hook's program for this long (`D`, e.g. 2s) (1 call in 64 per thread; at most 1m)")
			return func(e *env, args []string) error { return ctl.Stats(e.Streams, args, *dir, *asJSON, *cost) }
		},
	})
}

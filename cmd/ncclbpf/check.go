package main

import (
	"github.com/ncclbpf/ncclbpf/internal/ctl"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "check [--dir DIR] [--json] [--comm ID] [PID...]",
		Summary: "compare the tuner decisions of every process of each communicator, and name the first divergent call",
		Help: `Every communicator folds each tuner decision (call sequence, collective,
bytes, algorithm, protocol, channels, chunk size) into a digest that is a
sum of one term per call. The plugin's control plane drains them, off
NCCL's threads, into a ledger: the sum of every 64-call window (about a
million calls back), the last 16384 decisions, and the epochs: the calls
at which an at-seq reload, an agreed update or a two-phase switch made the
process run new code or new agreed values.

check reads the ledgers of every process (or the PIDs given), groups them
by communicator id, and compares the processes of each communicator from
the latest epoch they all share (the same switch, at the same call)
through the last call every one has drained. It names the first divergent
call, window by window, whatever came after it: the communicator, the call
and what each rank decided there (grouped by decision); a difference whose
decisions are no longer kept is named as its 64-call window. Once every
rank switched again at one call (reload --all --at-seq, agree), check
compares from there and says AGREE again.

Exit status: 0 all compared communicators agree, 1 a divergence (or
nothing could be compared), 2 usage.

Communicator ids are NCCL's (tuner ABI v5 and later); with older ABIs every
communicator has id 0 and processes cannot be told apart by communicator:
compare them only when each process has one communicator.`,
		Examples: []string{"ncclbpf check", "ncclbpf check --comm 0x5e5e", "ncclbpf check --json 4242 4243"},
		Complete: func([]string) []string { return controlNames() },
		Setup: func(fs *pflag.FlagSet) runFunc {
			dir, asJSON := controlFlags(fs)
			comm := fs.String("comm", "", "only this communicator `ID` (hex, as ncclbpf stats prints it)")
			var store ctl.StoreOptions
			storeFlags(fs, &store)
			fs.IntVar(&store.Expect, "expect", 0, "with --store: the `N`umber of ranks the job must have (default: the WORLD_SIZE they registered)")
			return func(e *env, args []string) error { return ctl.Check(e.Streams, args, *dir, *asJSON, *comm, &store) }
		},
	})
}

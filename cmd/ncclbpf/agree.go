package main

import (
	"time"

	"github.com/ncclbpf/ncclbpf/internal/ctl"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use: "agree [--dir DIR] [--comm ID] --from MAP --reduce SPEC [--elem T] (--to MAP --at-seq N|+K | --export FILE) [PID...]\n" +
			"agree --combine --output FILE FILE...\n" +
			"agree [--dir DIR] --import FILE --to MAP --at-seq N [PID...]",
		Summary: "reduce a rank-local map over the ranks and write the result to every rank's agreed map at one call",
		Help: `agree is the sanctioned closed loop of a rank-consistent policy. Programs
record rank-local measurements in an ordinary map (--from); the tuner decides
from an agreed map (--to, declared with NCCLBPF_AGREED), which programs can
only read. agree reads --from from every process here (or the PIDs given, or
those with communicator --comm), reduces the values element by element per
key over the processes that have the key, and writes the one result into
--to of every process, active from call --at-seq of every communicator:
calls before it see the old contents, calls from it on the new ones, on
every rank alike. +K means K calls after the largest call count any target
has reached now (resolved once for all targets).

Values are little-endian integers of type --elem (u64, u32, i64, i32);
--reduce gives the operation of each element: one of sum, mean (rounded
toward zero), min, max for all, or OP:COUNT,... in order, e.g.
min:12,mean:12 for 12 counts then 12 latencies. Sums are exact; a result
that does not fit the type is an error.

Across nodes: run agree --export FILE on every node (the node's partial
reduction: per key the number of ranks and the sums or extremes), gather
the files, agree --combine --output ALL FILE... anywhere, copy ALL to every
node and run agree --import ALL --to MAP --at-seq N there with the same
absolute N (a +K would resolve differently per node). Pick N far enough
ahead that no rank has passed it when its node imports. Within a node
the switch is two-phase; across nodes, --store (the job's TCPStore, where
every rank registers when NCCLBPF_STORE is set) makes the whole job one
two-phase round, with no files to carry.

The switch is two-phase: every process prepares (its communicators are
before N; the new values are staged), and only when every one said yes is
it committed; otherwise every process aborts and none switches (exit 1,
naming the processes that refused or did not answer). A process that
prepared and hears nothing aborts by itself.

A write of an agreed map without an agreed call is refused by the plugin,
with or without --force.`,
		Examples: []string{
			"ncclbpf agree --from local --to agreed --reduce min:12,mean:12 --at-seq +64",
			"ncclbpf agree --from local --reduce min:12,mean:12 --export node3.json",
			"ncclbpf agree --combine -o all.json node*.json",
			"ncclbpf agree --import all.json --to agreed --at-seq 250000",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			var o ctl.AgreeOptions
			dir, asJSON := controlFlags(fs)
			fs.StringVar(&o.From, "from", "", "the rank-local `MAP` to read from every process")
			fs.StringVar(&o.To, "to", "", "the agreed `MAP` to write")
			fs.StringVar(&o.Reduce, "reduce", "", "per-element reduction `SPEC`: sum|mean|min|max, or OP:COUNT,...")
			fs.StringVar(&o.Elem, "elem", "u64", "element `TYPE`: u64, u32, i64, i32")
			fs.StringVar(&o.AtSeq, "at-seq", "", "activation call: `N`, or +K after the furthest target (not with --import)")
			fs.StringVar(&o.Comm, "comm", "", "only processes with this communicator `ID` (hex)")
			fs.StringVar(&o.Export, "export", "", "write this node's partial reduction to `FILE` instead of writing --to")
			fs.BoolVar(&o.Combine, "combine", false, "combine the partial files given as arguments into --output")
			fs.StringVarP(&o.Out, "output", "o", "", "with --combine: the combined `FILE`")
			fs.StringVar(&o.Out, "out", "", "")
			replacedBy(fs, "out", "output")
			fs.StringVar(&o.Import, "import", "", "write the reduction of a (combined) partial `FILE` instead of reading --from")
			fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "longest wait (`D`, e.g. 30s) for a target's previous update to activate")
			storeFlags(fs, &o.Store)
			fs.IntVar(&o.Store.Expect, "expect", 0, "with --store: the `N`umber of ranks the job must have (default: the WORLD_SIZE they registered)")
			return func(e *env, args []string) error {
				o.Dir, o.JSON = *dir, *asJSON
				return ctl.Agree(e.Streams, args, &o)
			}
		},
	})
}

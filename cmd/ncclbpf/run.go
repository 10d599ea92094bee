package main

import (
	"strings"

	"github.com/ncclbpf/ncclbpf/internal/offline"
	"github.com/ncclbpf/ncclbpf/policies"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use: "run [--section S | --hook H] [--engine E] [--coll C] [--bytes N] [--ranks N] [--nodes N] [--set FIELD=VALUE]... [--var NAME=VALUE]... [--json] OBJ\n" +
			"run --hook H --fields",
		Summary: "run a policy offline on a context you describe: no GPU, no NCCL",
		Help: `Loads OBJ as the plugin does (every program verified against its hook;
maps, --var settings and a --rules table shared by the bundle), builds the
context of one program's hook from its field descriptions, runs the program
and prints r0, every output field with what it means, and the maps the run
changed (decoded with the object's BTF, before -> after).

OBJ is a .bpf.o file or builtin:NAME (` + strings.Join(policies.Names(), ", ") + `).

Which program: the one of --section (a section or program name), the one
attached to --hook, the only one, or else the tuner program (a note says
so). --hook also verifies a program whose section names no hook, or another
hook, against that hook's context.

The context starts from the values a typical call has (--fields lists the
fields; the output shows every input), then:
  --coll, --bytes, --ranks, --nodes   set the collective (coll_type or func),
                                      the size (n_bytes or bytes), ranks, nodes
  --set FIELD=VALUE                   any field by its C name: n_bytes=4MiB,
                                      coll_type=allreduce, algorithm=ring,
                                      cost[1][2]=12.5 (or cost[5]=12.5)
Values are integers (decimal, 0x hex, negative, K/M/G or KiB/MiB/GiB
suffixes), names for collectives, algorithms and protocols, or, for the
tuner's cost cells, microseconds as a float ("na" or -1: unavailable; 0x...:
raw float bits).

Tuner contexts: by default the cost table is an illustrative model (latency
plus size over bandwidth) in which every cell is available and the cheapest
cell depends on --bytes and --ranks; it is not NCCL's model. --costs edits
it: ALGO=US sets a row, PROTO=US a column, ALGO/PROTO=US one cell, all=US
every cell, "none" makes every cell unavailable, e.g.
  --costs none,ring/simple=40,tree/ll=55     only two cells available
  --costs nvls=na,collnet_direct=na,collnet_chain=na
avail_mask, n_nvl_domains and the ranks per NVLink domain follow from the
other inputs unless set. The output ends with what the host would do with
the decision (the chosen cell must be available, channels are clamped to 64)
and what NCCL would have chosen without the policy.

The program runs only when it is attached to a hook (by its section, or
--hook) and passes the verifier, as the plugin would load it; a rejection is
the verifier's located error. --unverified is for raw experiments: the
program runs without the verifier on the interpreter, which traps bad memory
accesses, may call only helpers that take no pointers, and the output says
UNVERIFIED. A program with no hook (generic, e.g. from the conformance
corpus) needs --unverified: it gets r1 = the --mem bytes and r2 = their
length as in the conformance format. With a hook, --mem gives the raw
initial context instead of the typical values.

--repeat N runs the program N times on fresh copies of the context, the
sequence numbers (call_seq, seq, local_seq) counting up, and sums up the
distinct results; maps and their changes accumulate. Maps: only those that
changed (--maps all: every map; --maps none). Exit status 0 when the program
ran, 1 when the object, a value or the run failed, 2 for usage errors.`,
		Examples: []string{
			"ncclbpf run policies/size_aware.bpf.o --coll allreduce --bytes 4MiB --ranks 8",
			"ncclbpf run builtin:size_aware --bytes 1MiB --json  # below size_lo: NCCL decides",
			"ncclbpf run policies/size_aware.bpf.o --var size_lo=512K --bytes 1MiB",
			"ncclbpf run builtin:rules --rules rules.csv --coll allgather --bytes 64K --nodes 2 --ranks 16",
			"ncclbpf run policies/size_aware.bpf.o --costs ring/simple=na --bytes 4MiB  # Ring/Simple unavailable",
			"ncclbpf run policies/latency_stats/latency_stats.bpf.o --set func=allreduce --set duration_ns=250000 --repeat 3",
			"ncclbpf run --hook profiler/coll_end --fields  # list a hook's context fields",
			"ncclbpf run prog.o --unverified --section test --mem '01 00 00 00 ff'  # a generic program, no verifier",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			var o runOptions
			runFlags(fs, &o)
			return func(e *env, args []string) error { return runRun(e, args, o) }
		},
	})
}

// runOptions are the flags of run: the run's own, and the engine.
type runOptions struct {
	offline.Options
	engine string
}

// runFlags declares the flags of run.
func runFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.StringVar(&o.Section, "section", "", "run the program of this `SECTION` (or with this name)")
	fs.StringVar(&o.Hook, "hook", "", "run the program attached to this `HOOK`, or verify the chosen program against it")
	fs.StringVar(&o.engine, "engine", defaultEngine, "`ENGINE` to run on: "+strings.Join(engineNames(), ", ")+" (interp traps bad memory accesses)")
	fs.StringArrayVar(&o.Sets, "set", nil, "set a context field by its C name, `FIELD=VALUE`: n_bytes=4MiB, algorithm=ring, cost[1][2]=12.5 (repeatable)")
	fs.StringVar(&o.Coll, "coll", "", "collective `NAME`: broadcast, reduce, allgather, reducescatter, allreduce (profiler: also sendrecv, send, recv, alltoall)")
	fs.StringVar(&o.Bytes, "bytes", "", "`SIZE` of the collective in bytes, e.g. 4MiB or 65536")
	fs.StringVar(&o.Ranks, "ranks", "", "`N` ranks in the communicator")
	fs.StringVar(&o.Nodes, "nodes", "", "`N` nodes spanned by the communicator")
	fs.StringVar(&o.Costs, "costs", "", "edit the tuner's cost table: a `LIST` of ALGO=US, PROTO=US, ALGO/PROTO=US, all=US, none (US: microseconds or na)")
	fs.StringVar(&o.Mem, "mem", "", "`HEX` bytes: r1/r2 of a generic program, or the raw initial context (@FILE reads them from FILE)")
	varFlag(fs, &o.Vars)
	fs.StringVar(&o.Rules, "rules", "", "fill the rules policy's table from this `FILE` (NCCL's example CSV tuner format)")
	fs.IntVar(&o.Repeat, "repeat", 1, "run `N` times, sequence numbers counting up")
	fs.StringVar(&o.Maps, "maps", "changed", "`WHICH` maps to show: changed, all or none")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object instead of text")
	fs.BoolVar(&o.Fields, "fields", false, "list the context fields of the program's hook (or of --hook) and exit")
	fs.BoolVar(&o.Unverified, "unverified", false, "raw experiments: run the program without the verifier, on the interpreter (the output says UNVERIFIED)")
}

func runRun(e *env, args []string, o runOptions) error {
	if o.Fields && len(args) == 0 && o.Hook != "" {
		return offline.WriteFields(e.Stdout, o.Hook)
	}
	if len(args) != 1 {
		return usageErrorf("want one object file, got %d arguments", len(args))
	}
	engine, err := newEngine(o.engine)
	if err != nil {
		return err
	}
	return offline.Run(e.Stdout, args[0], &o.Options, engine)
}

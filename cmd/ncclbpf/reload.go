package main

import (
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/internal/ctl"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use: "reload [--dir DIR] [--at-seq N|+K] [--timeout D] [--var NAME=VALUE]... [--no-manifest] PID OBJ\n" +
			"reload [--dir DIR] --all [--expect N] [--at-seq N|+K] [--timeout D] [--var NAME=VALUE]... OBJ\n" +
			"reload --store STORE --all [--expect N] --at-seq N|+K [--var NAME=VALUE]... OBJ\n" +
			"reload [--dir DIR] --rollback PID|--all\n" +
			"reload [--dir DIR] --cancel PID|--all",
		Summary: "swap the policy of running processes, atomically, without a restart",
		Help: `reload verifies and compiles OBJ here first (as 'ncclbpf verify' would,
and with the JIT, as the plugin will), then sends it to each target
process, which loads, verifies and compiles it again off NCCL's threads and
publishes it to every hook slot at once. A call in flight finishes on the old
code; the old code is freed after a grace period. A policy that fails at any
stage changes nothing, and the error says why. Maps that the old and the new
object define alike (name, type, sizes, flags) keep their contents.

--at-seq N makes every communicator switch at its call N (tuner calls with
call_seq >= N use the new code), so that all ranks of a job change at the
same collective; give the same N to every process of the job (--all does).
+K means K calls after the largest sequence any target has reached now.
The reload is refused if a communicator already passed N. The switch
completes when every communicator has passed N, or after --timeout.

An activation manifest OBJ.activate next to OBJ (at_seq = N, optionally
comm.<id> = N per communicator; see docs/operators-guide.md) stands for
--at-seq N with an absolute N: give every node the same object and manifest
and every node switches at the same collective. A communicator that already
passed its N refuses the reload (nothing changes there). --no-manifest
ignores the file.

--all targets every process of the control directory; all are asked at
once, each with a bounded wait. With --at-seq the switch is two-phase:
every process prepares (loads, verifies, compiles and checks that its
communicators are before N), and only when every one said yes is it
committed; otherwise every process aborts and none switches (exit 1). Nothing is sent unless every one answered
and, for each single-node communicator the processes report, all of its
ranks are among them (a rank whose socket is missing would keep the old
policy); --expect N also requires exactly N processes.

--store STORE (default $NCCLBPF_STORE) with --all reaches every rank of a
multi-node job through the job's store (TCPStore or etcd) instead of this
host's sockets, in one two-phase round whose decision is recorded in the
store; --expect N, or the WORLD_SIZE the ranks registered, names every rank
that has no live registration, and nothing is sent then.

--rollback reloads the object that ran before the last reload. --cancel
withdraws an armed --at-seq reload that has not completed: the old
policy keeps running everywhere.

--var NAME=VALUE sets a volatile const global of OBJ (repeatable, or
NAME=VALUE,NAME=VALUE in one), as NCCLBPF_POLICY_CONFIG does at load.`,
		Examples: []string{
			"ncclbpf reload 4242 policy_v2.bpf.o",
			"ncclbpf reload --all --at-seq +1000 policy_v2.bpf.o  # all ranks here switch at the same collective",
			"ncclbpf reload --rollback 4242",
			"ncclbpf reload --all --expect 8 --at-seq +1000 policy_v2.bpf.o  # refuse unless 8 processes answer",
			"ncclbpf reload --cancel --all",
			"ncclbpf reload --var size_lo=8M 4242 policies/size_aware.bpf.o  # new tunables, same object",
		},
		Complete: completePIDs,
		Setup: func(fs *pflag.FlagSet) runFunc {
			var o ctl.ReloadOptions
			dir, asJSON := controlFlags(fs)
			fs.BoolVar(&o.All, "all", false, "every process in the control directory")
			fs.StringVar(&o.AtSeq, "at-seq", "", "switch at this per-communicator call sequence (`N`, or +K from now)")
			fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "longest wait (`D`, e.g. 10m) for every communicator to reach --at-seq")
			varFlag(fs, &o.Vars)
			fs.BoolVar(&o.Rollback, "rollback", false, "reload the object that ran before the last reload")
			fs.BoolVar(&o.NoManifest, "no-manifest", false, "ignore OBJ.activate (the activation manifest next to OBJ)")
			fs.BoolVar(&o.Cancel, "cancel", false, "withdraw an armed --at-seq reload")
			fs.IntVar(&o.Expect, "expect", 0, "with --all: the `N`umber of processes that must answer (0: any; with --store: the job's WORLD_SIZE)")
			storeFlags(fs, &o.Store)
			return func(e *env, args []string) error {
				o.Dir, o.JSON, o.TimeoutSet = *dir, *asJSON, fs.Changed("timeout")
				return ctl.Reload(e.Streams, args, &o)
			}
		},
	})
}

// varFlag declares --var NAME=VALUE (repeatable; one may hold a
// comma-separated list), and --vars, its deprecated spelling.
func varFlag(fs *pflag.FlagSet, vars *[]string) {
	fs.StringArrayVar(vars, "var", nil, "set a volatile const global of the object, `NAME=VALUE` (repeatable; or a comma-separated list)")
	fs.StringArrayVar(vars, "vars", nil, "")
	replacedBy(fs, "vars", "var")
}

// splitVars returns the NAME=VALUE items of the --var flags.
func splitVars(flags []string) []string {
	var out []string
	for _, f := range flags {
		for _, item := range strings.Split(f, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
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
			var o agreeOptions
			o.dir, o.asJSON = controlFlags(fs)
			fs.StringVar(&o.from, "from", "", "the rank-local `MAP` to read from every process")
			fs.StringVar(&o.to, "to", "", "the agreed `MAP` to write")
			fs.StringVar(&o.reduce, "reduce", "", "per-element reduction `SPEC`: sum|mean|min|max, or OP:COUNT,...")
			fs.StringVar(&o.elem, "elem", "u64", "element `TYPE`: u64, u32, i64, i32")
			fs.StringVar(&o.atSeq, "at-seq", "", "activation call: `N`, or +K after the furthest target (not with --import)")
			fs.StringVar(&o.comm, "comm", "", "only processes with this communicator `ID` (hex)")
			fs.StringVar(&o.export, "export", "", "write this node's partial reduction to `FILE` instead of writing --to")
			fs.BoolVar(&o.combine, "combine", false, "combine the partial files given as arguments into --output")
			fs.StringVarP(&o.out, "output", "o", "", "with --combine: the combined `FILE`")
			fs.StringVar(&o.out, "out", "", "")
			replacedBy(fs, "out", "output")
			fs.StringVar(&o.imp, "import", "", "write the reduction of a (combined) partial `FILE` instead of reading --from")
			fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "longest wait (`D`, e.g. 30s) for a target's previous update to activate")
			storeFlags(fs, &o.store)
			fs.IntVar(&o.store.expect, "expect", 0, "with --store: the `N`umber of ranks the job must have (default: the WORLD_SIZE they registered)")
			return func(e *env, args []string) error { return runAgree(e, args, &o) }
		},
	})
}

// agreeOptions are the flags of agree.
type agreeOptions struct {
	dir                                                   *string
	asJSON                                                *bool
	from, to, reduce, elem, atSeq, comm, export, out, imp string
	combine                                               bool
	timeout                                               time.Duration
	store                                                 storeOptions
}

func runAgree(e *env, args []string, o *agreeOptions) error {
	dir, asJSON := o.dir, o.asJSON
	from, to, reduce, elem, atSeq, comm := &o.from, &o.to, &o.reduce, &o.elem, &o.atSeq, &o.comm
	export, combine, out, imp, timeout := &o.export, &o.combine, &o.out, &o.imp, &o.timeout
	if *combine {
		if *out == "" || len(args) == 0 {
			return usageErrorf("--combine needs --output FILE and the partial files")
		}
		var all *control.Partial
		for _, f := range args {
			p, err := control.ReadPartial(f)
			if err != nil {
				return err
			}
			if all == nil {
				all = p
			} else if err := all.Combine(p); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
		if err := all.WriteFile(*out); err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e, map[string]any{"combined": args, "keys": len(all.Entries), "output": *out})
		}
		fmt.Fprintf(e.Stdout, "combined %d files: %d keys into %s\n", len(args), len(all.Entries), *out)
		return nil
	}
	if o.store.url != "" {
		return agreeStore(e, o, args)
	}
	pids, err := targets(*dir, args)
	if err != nil {
		return err
	}
	if *comm != "" {
		id, err := parseCommID(*comm)
		if err != nil {
			return err
		}
		if pids, err = withComm(*dir, pids, id); err != nil {
			return err
		}
	}
	var part *control.Partial
	switch {
	case *imp != "":
		if *from != "" || *export != "" {
			return usageErrorf("--import replaces --from and --export")
		}
		if strings.HasPrefix(*atSeq, "+") || *atSeq == "" {
			return usageErrorf("--import needs an absolute --at-seq N, the same on every node (+K resolves per host)")
		}
		if part, err = control.ReadPartial(*imp); err != nil {
			return err
		}
	default:
		if *from == "" || *reduce == "" {
			return usageErrorf("want --from MAP and --reduce SPEC (or --import FILE, or --combine)")
		}
		if part, err = gather(e, *dir, pids, *from, *reduce, *elem); err != nil {
			return err
		}
	}
	if *export != "" {
		if err := part.WriteFile(*export); err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e, map[string]any{"map": part.Map, "keys": len(part.Entries), "pids": pids, "export": *export})
		}
		fmt.Fprintf(e.Stdout, "exported %d keys of %s from %d processes to %s\n", len(part.Entries), part.Map, len(pids), *export)
		return nil
	}
	if *to == "" || *atSeq == "" {
		return usageErrorf("want --to MAP and --at-seq N|+K (or --export FILE)")
	}
	kvs, err := part.Result()
	if err != nil {
		return fmt.Errorf("reduce %s: %w", part.Map, err)
	}
	if len(kvs) == 0 {
		return control.ErrNoEntries
	}
	n, err := resolveSeq(*dir, pidTargets(pids), *atSeq)
	if err != nil {
		return err
	}
	names := make([]string, len(pids))
	for i, pid := range pids {
		names[i] = fmt.Sprint(pid)
	}
	ranks, err := socketRanks(*dir, names, *timeout)
	if err != nil {
		return err
	}
	res := control.TwoPhase(ranks, &control.Request{Map: *to, Entries: kvs, AtSeq: &n}, control.SwitchOptions{})
	return reportSwitch(e, "agree", res, func(string) string {
		return fmt.Sprintf("%s: %d keys, active from call %d", *to, len(kvs), n)
	}, *asJSON)
}

// agreeStore is agree over every process registered in the job's store.
func agreeStore(e *env, o *agreeOptions, args []string) error {
	if len(args) > 0 || o.imp != "" || o.export != "" || o.comm != "" {
		return usageErrorf("--store reaches every rank of the job: no PIDs, --import, --export or --comm")
	}
	if o.from == "" || o.reduce == "" || o.to == "" || o.atSeq == "" {
		return usageErrorf("want --from MAP, --reduce SPEC, --to MAP and --at-seq N|+K")
	}
	kv, ranks, err := openStoreRanks(&o.store)
	if err != nil {
		return err
	}
	defer kv.Close()
	part, hi, err := gatherRanks(ranks, o.from, o.reduce, o.elem, o.store.rankTimeout)
	if err != nil {
		return err
	}
	kvs, err := part.Result()
	if err != nil {
		return fmt.Errorf("reduce %s: %w", part.Map, err)
	}
	if len(kvs) == 0 {
		return control.ErrNoEntries
	}
	n, err := seqFrom(o.atSeq, hi)
	if err != nil {
		return err
	}
	res := storeSwitch(kv, &o.store, ranks, &control.Request{Map: o.to, Entries: kvs, AtSeq: &n})
	return reportSwitch(e, "agree", res, func(string) string {
		return fmt.Sprintf("%s: %d keys, active from call %d", o.to, len(kvs), n)
	}, *o.asJSON)
}

// gatherRanks reads map from of every rank and reduces it; it also returns
// the furthest call any rank reported.
func gatherRanks(ranks []control.Rank, from, reduce, elem string, timeout time.Duration) (*control.Partial, uint64, error) {
	var part *control.Partial
	var hi uint64
	for _, r := range ranks {
		resp, err := r.Call(&control.Request{Op: control.OpMapRead, Map: from}, timeout)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w (nothing was switched)", r.Name(), err)
		}
		ms := resp.MapSpec
		if ms == nil {
			return nil, 0, fmt.Errorf("%s: map %s: no description in the answer", r.Name(), from)
		}
		if part == nil {
			spec, err := control.ParseReduce(reduce, elem, ms.ValueSize)
			if err != nil {
				return nil, 0, fmt.Errorf("map %s: %w", from, err)
			}
			part = control.NewPartial(from, ms.KeySize, ms.ValueSize, spec)
		} else if ms.KeySize != part.KeySize || ms.ValueSize != part.ValueSize {
			return nil, 0, fmt.Errorf("%s: map %s has %d/%d-byte keys/values, unlike the others: the ranks run different policies",
				r.Name(), from, ms.KeySize, ms.ValueSize)
		}
		if err := part.Add(resp.Entries); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", r.Name(), err)
		}
		st, err := r.Call(&control.Request{Op: control.OpStats}, timeout)
		if err != nil || st.Stats == nil {
			return nil, 0, fmt.Errorf("%s: stats: %v", r.Name(), err)
		}
		hi = max(hi, st.Stats.Tuner.SeqMax)
	}
	return part, hi, nil
}

// gather reads map from of every pid and reduces it.
func gather(e *env, dir string, pids []int, from, reduce, elem string) (*control.Partial, error) {
	var part *control.Partial
	for _, pid := range pids {
		resp, err := call(dir, pidTarget(pid), &control.Request{Op: control.OpMapRead, Map: from})
		if err != nil {
			return nil, err
		}
		ms := resp.MapSpec
		if ms == nil {
			return nil, fmt.Errorf("pid %d: map %s: no description in the answer", pid, from)
		}
		if part == nil {
			spec, err := control.ParseReduce(reduce, elem, ms.ValueSize)
			if err != nil {
				return nil, fmt.Errorf("map %s: %w", from, err)
			}
			part = control.NewPartial(from, ms.KeySize, ms.ValueSize, spec)
		} else if ms.KeySize != part.KeySize || ms.ValueSize != part.ValueSize {
			return nil, fmt.Errorf("pid %d: map %s has %d/%d-byte keys/values, pid %d's %d/%d: the processes run different policies",
				pid, from, ms.KeySize, ms.ValueSize, pids[0], part.KeySize, part.ValueSize)
		}
		if err := part.Add(resp.Entries); err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
	}
	return part, nil
}

// withComm keeps the pids that have a live communicator id.
func withComm(dir string, pids []int, id uint64) ([]int, error) {
	var out []int
	for _, pid := range pids {
		resp, err := call(dir, pidTarget(pid), &control.Request{Op: control.OpStats})
		if err != nil || resp.Stats == nil {
			continue
		}
		for _, d := range resp.Stats.Digests {
			if d.CommID == id {
				out = append(out, pid)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no process has communicator %#x", id)
	}
	return out, nil
}

// callRetryBusy is call, retried while the target is still completing an
// earlier reload or agreed update (its activation point not yet passed).
func callRetryBusy(dir string, pid int, req *control.Request, timeout time.Duration) (*control.Response, error) {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := call(dir, pidTarget(pid), req)
		if err == nil || !strings.Contains(err.Error(), "another reload is in progress") || time.Now().After(deadline) {
			return resp, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

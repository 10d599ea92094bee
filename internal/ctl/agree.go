package ctl

import (
	"fmt"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
)

// AgreeOptions are what ncclbpf agree is asked to do, as its flags of the
// same names spell them.
type AgreeOptions struct {
	Dir     string        // the control directory
	JSON    bool          // print JSON
	From    string        // the rank-local map to read from every process
	To      string        // the agreed map to write
	Reduce  string        // per-element reduction: sum|mean|min|max, or OP:COUNT,...
	Elem    string        // element type: u64, u32, i64, i32
	AtSeq   string        // activation call: N, or +K after the furthest target
	Comm    string        // only processes with this communicator id (hex)
	Export  string        // write this node's partial reduction to this file instead of writing To
	Combine bool          // combine the partial files given as arguments into Out
	Out     string        // with Combine: the combined file
	Import  string        // write the reduction of this (combined) partial file instead of reading From
	Timeout time.Duration // longest wait for a target's previous update to activate
	Store   StoreOptions  // the job's store, to reach every rank of a multi-node job
}

// Agree reduces a rank-local map over the processes named in args (or
// every process of o.Dir, or every rank of o.Store) and writes the result
// to every one's agreed map at one call, two-phase; or exports, imports or
// combines partial reductions, as o says. A round that aborted is reported
// on e.Stderr and returns cli.ErrReported.
func Agree(e cli.Streams, args []string, o *AgreeOptions) error {
	if o.Combine {
		if o.Out == "" || len(args) == 0 {
			return cli.Usagef("--combine needs --output FILE and the partial files")
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
		if err := all.WriteFile(o.Out); err != nil {
			return err
		}
		if o.JSON {
			return cli.WriteJSON(e.Stdout, map[string]any{"combined": args, "keys": len(all.Entries), "output": o.Out})
		}
		fmt.Fprintf(e.Stdout, "combined %d files: %d keys into %s\n", len(args), len(all.Entries), o.Out)
		return nil
	}
	if o.Store.URL != "" {
		return agreeStore(e, o, args)
	}
	pids, err := targets(o.Dir, args)
	if err != nil {
		return err
	}
	if o.Comm != "" {
		id, err := parseCommID(o.Comm)
		if err != nil {
			return err
		}
		if pids, err = withComm(o.Dir, pids, id); err != nil {
			return err
		}
	}
	var part *control.Partial
	switch {
	case o.Import != "":
		if o.From != "" || o.Export != "" {
			return cli.Usagef("--import replaces --from and --export")
		}
		if strings.HasPrefix(o.AtSeq, "+") || o.AtSeq == "" {
			return cli.Usagef("--import needs an absolute --at-seq N, the same on every node (+K resolves per host)")
		}
		if part, err = control.ReadPartial(o.Import); err != nil {
			return err
		}
	default:
		if o.From == "" || o.Reduce == "" {
			return cli.Usagef("want --from MAP and --reduce SPEC (or --import FILE, or --combine)")
		}
		if part, err = gather(e, o.Dir, pids, o.From, o.Reduce, o.Elem); err != nil {
			return err
		}
	}
	if o.Export != "" {
		if err := part.WriteFile(o.Export); err != nil {
			return err
		}
		if o.JSON {
			return cli.WriteJSON(e.Stdout, map[string]any{"map": part.Map, "keys": len(part.Entries), "pids": pids, "export": o.Export})
		}
		fmt.Fprintf(e.Stdout, "exported %d keys of %s from %d processes to %s\n", len(part.Entries), part.Map, len(pids), o.Export)
		return nil
	}
	if o.To == "" || o.AtSeq == "" {
		return cli.Usagef("want --to MAP and --at-seq N|+K (or --export FILE)")
	}
	kvs, err := part.Result()
	if err != nil {
		return fmt.Errorf("reduce %s: %w", part.Map, err)
	}
	if len(kvs) == 0 {
		return control.ErrNoEntries
	}
	n, err := resolveSeq(o.Dir, pidTargets(pids), o.AtSeq)
	if err != nil {
		return err
	}
	names := make([]string, len(pids))
	for i, pid := range pids {
		names[i] = fmt.Sprint(pid)
	}
	ranks, err := socketRanks(o.Dir, names, o.Timeout)
	if err != nil {
		return err
	}
	res := control.TwoPhase(ranks, &control.Prepare{Map: o.To, Entries: kvs, AtSeq: &n}, control.SwitchOptions{})
	return reportSwitch(e, "agree", res, func(string) string {
		return fmt.Sprintf("%s: %d keys, active from call %d", o.To, len(kvs), n)
	}, o.JSON)
}

// agreeStore is agree over every process registered in the job's store.
func agreeStore(e cli.Streams, o *AgreeOptions, args []string) error {
	if len(args) > 0 || o.Import != "" || o.Export != "" || o.Comm != "" {
		return cli.Usagef("--store reaches every rank of the job: no PIDs, --import, --export or --comm")
	}
	if o.From == "" || o.Reduce == "" || o.To == "" || o.AtSeq == "" {
		return cli.Usagef("want --from MAP, --reduce SPEC, --to MAP and --at-seq N|+K")
	}
	kv, ranks, err := openStoreRanks(&o.Store)
	if err != nil {
		return err
	}
	defer kv.Close()
	part, hi, err := gatherRanks(ranks, o.From, o.Reduce, o.Elem, o.Store.RankTimeout)
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
	n, err := seqFrom(o.AtSeq, hi)
	if err != nil {
		return err
	}
	res := storeSwitch(kv, &o.Store, ranks, &control.Prepare{Map: o.To, Entries: kvs, AtSeq: &n})
	return reportSwitch(e, "agree", res, func(string) string {
		return fmt.Sprintf("%s: %d keys, active from call %d", o.To, len(kvs), n)
	}, o.JSON)
}

// gatherRanks reads map from of every rank and reduces it; it also returns
// the furthest call any rank reported.
func gatherRanks(ranks []control.Rank, from, reduce, elem string, timeout time.Duration) (*control.Partial, uint64, error) {
	var part *control.Partial
	var hi uint64
	for _, r := range ranks {
		resp, err := r.Call(&control.MapRead{Map: from}, timeout)
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
		st, err := r.Call(&control.StatsQuery{}, timeout)
		if err != nil || st.Stats == nil {
			return nil, 0, fmt.Errorf("%s: stats: %v", r.Name(), err)
		}
		hi = max(hi, st.Stats.Tuner.SeqMax)
	}
	return part, hi, nil
}

// gather reads map from of every pid and reduces it.
func gather(e cli.Streams, dir string, pids []int, from, reduce, elem string) (*control.Partial, error) {
	var part *control.Partial
	for _, pid := range pids {
		resp, err := call(dir, pidTarget(pid), &control.MapRead{Map: from})
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
		resp, err := call(dir, pidTarget(pid), &control.StatsQuery{})
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
func callRetryBusy(dir string, pid int, req control.Payload, timeout time.Duration) (*control.Response, error) {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := call(dir, pidTarget(pid), req)
		if err == nil || !strings.Contains(err.Error(), "another reload is in progress") || time.Now().After(deadline) {
			return resp, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/plugin/config"
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
			var o reloadOptions
			o.dir, o.asJSON = controlFlags(fs)
			fs.BoolVar(&o.all, "all", false, "every process in the control directory")
			fs.StringVar(&o.atSeq, "at-seq", "", "switch at this per-communicator call sequence (`N`, or +K from now)")
			fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "longest wait (`D`, e.g. 10m) for every communicator to reach --at-seq")
			varFlag(fs, &o.vars)
			fs.BoolVar(&o.rollback, "rollback", false, "reload the object that ran before the last reload")
			fs.BoolVar(&o.noManifest, "no-manifest", false, "ignore OBJ.activate (the activation manifest next to OBJ)")
			fs.BoolVar(&o.cancel, "cancel", false, "withdraw an armed --at-seq reload")
			fs.IntVar(&o.expect, "expect", 0, "with --all: the `N`umber of processes that must answer (0: any; with --store: the job's WORLD_SIZE)")
			storeFlags(fs, &o.store)
			return func(e *env, args []string) error {
				o.timeoutSet = fs.Changed("timeout")
				return runReload(e, args, &o)
			}
		},
	})
}

// reloadOptions are the flags of reload.
type reloadOptions struct {
	dir                               *string
	asJSON                            *bool
	all, rollback, noManifest, cancel bool
	timeoutSet                        bool
	atSeq                             string
	vars                              []string
	timeout                           time.Duration
	expect                            int
	store                             storeOptions
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

func runReload(e *env, args []string, o *reloadOptions) error {
	dir, asJSON, all, atSeq, timeout := o.dir, o.asJSON, &o.all, &o.atSeq, &o.timeout
	rollback, noManifest, cancel, expect := &o.rollback, &o.noManifest, &o.cancel, &o.expect
	vars := strings.Join(splitVars(o.vars), ",")
	if *rollback && *cancel {
		return usageErrorf("--rollback and --cancel exclude each other")
	}
	if *timeout <= 0 || *timeout > maxActivationTimeout {
		return usageErrorf("--timeout %v: want more than 0 and at most %v", *timeout, maxActivationTimeout)
	}
	if *expect < 0 || (*expect > 0 && !*all) {
		return usageErrorf("--expect N goes with --all, N > 0")
	}
	want := 2
	if *all {
		want--
	}
	if *rollback || *cancel {
		want--
	}
	if len(args) != want {
		return usageErrorf("want PID|--all and OBJ (or --rollback PID|--all, --cancel PID|--all), got %d arguments", len(args))
	}
	if o.store.url != "" {
		if !*all || *rollback || *cancel || *atSeq == "" {
			return usageErrorf("--store goes with --all --at-seq N|+K OBJ (every rank of the job switches at one call)")
		}
		o.store.expect = *expect
		return reloadStore(e, args[0], vars, o)
	}
	var pids []target
	var err error
	if *all {
		pids, err = allTargets(*dir, *expect)
		if err != nil {
			return err
		}
	} else {
		pid, err := parsePID(args[0])
		if err != nil {
			return err
		}
		pids = []target{pid}
		args = args[1:]
	}
	if *cancel {
		return sendAll(e, *dir, pids, &control.Request{Op: control.OpCancel}, *asJSON)
	}
	req := &control.Request{Op: control.OpReload, Vars: vars, TimeoutMS: timeout.Milliseconds()}
	if *rollback {
		req.Op = control.OpRollback
	} else {
		path := args[0]
		obj, err := config.ReadRegularFile(path, config.MaxPolicyBytes)
		if err != nil {
			return err
		}
		opts := bundle.Options{Name: path, RequireNative: true}
		if vars != "" {
			vs, err := config.ParseVars(vars)
			if err != nil {
				return usageErrorf("--var: %v", err)
			}
			for _, v := range vs {
				opts.Vars = append(opts.Vars, bundle.Var{Name: v.Name, Value: v.Value})
			}
		}
		b, err := bundle.Load(obj, opts)
		if err != nil {
			return fmt.Errorf("%w (checked here; nothing was sent)", err)
		}
		b.Close()
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if !*noManifest {
			if _, err := applyManifest(e.Stdout, args[0], *atSeq, o.timeoutSet, req); err != nil {
				return err
			}
		}
		req.Object, req.Name = obj, path
	}
	if *atSeq != "" {
		n, err := resolveSeq(*dir, pids, *atSeq)
		if err != nil {
			return err
		}
		req.AtSeq = &n
	}
	if *all && req.AtSeq != nil && req.Op == control.OpReload {
		// Every process switches at N or none does (two-phase).
		names := make([]string, len(pids))
		for i, p := range pids {
			names[i] = string(p)
		}
		ranks, err := socketRanks(*dir, names, 30*time.Second)
		if err != nil {
			return err
		}
		res := control.TwoPhase(ranks, req, control.SwitchOptions{})
		return reportSwitch(e, "reload", res, func(string) string {
			return fmt.Sprintf("%s: armed: communicators switch at call %d", req.Name, *req.AtSeq)
		}, *asJSON)
	}
	return sendAll(e, *dir, pids, req, *asJSON)
}

// reloadStore is reload --all --at-seq over every rank of the job's store.
func reloadStore(e *env, path, vars string, o *reloadOptions) error {
	req := &control.Request{Op: control.OpReload, Vars: vars, TimeoutMS: o.timeout.Milliseconds()}
	obj, err := config.ReadRegularFile(path, config.MaxPolicyBytes)
	if err != nil {
		return err
	}
	opts := bundle.Options{Name: path, RequireNative: true}
	if vars != "" {
		vs, err := config.ParseVars(vars)
		if err != nil {
			return usageErrorf("--var: %v", err)
		}
		for _, v := range vs {
			opts.Vars = append(opts.Vars, bundle.Var{Name: v.Name, Value: v.Value})
		}
	}
	b, err := bundle.Load(obj, opts)
	if err != nil {
		return fmt.Errorf("%w (checked here; nothing was sent)", err)
	}
	b.Close()
	req.Object, req.Name = obj, filepath.Base(path)
	kv, ranks, err := openStoreRanks(&o.store)
	if err != nil {
		return err
	}
	defer kv.Close()
	var hi uint64
	if strings.HasPrefix(o.atSeq, "+") {
		if hi, err = furthestSeq(ranks, o.store.rankTimeout); err != nil {
			return err
		}
	}
	n, err := seqFrom(o.atSeq, hi)
	if err != nil {
		return err
	}
	req.AtSeq = &n
	res := storeSwitch(kv, &o.store, ranks, req)
	return reportSwitch(e, "reload", res, func(string) string {
		return fmt.Sprintf("%s: armed: communicators switch at call %d", req.Name, n)
	}, *o.asJSON)
}

// maxActivationTimeout bounds --timeout (the plugin refuses more).
const maxActivationTimeout = time.Hour

// allTargets lists the processes of dir, asking all at once; it fails if
// any socket did not answer, if expect > 0 and the count differs, or if a
// single-node communicator has ranks that no answering process reports.
func allTargets(dir string, expect int) ([]target, error) {
	rs, bad, err := queryAll(dir, &control.Request{Op: control.OpInfo}, 10*time.Second)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("not every process of %s answered (nothing was sent):\n  %s", dir, strings.Join(bad, "\n  "))
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("no process serves a control socket in %s", dir)
	}
	if expect > 0 && len(rs) != expect {
		return nil, fmt.Errorf("%d processes answered in %s, --expect %d (nothing was sent)", len(rs), dir, expect)
	}
	type seen struct {
		ranks uint32
		n     int
	}
	comms := map[uint64]*seen{}
	var out []target
	for _, r := range rs {
		out = append(out, target(r.Name))
		if r.Resp.Info == nil {
			continue
		}
		for _, c := range r.Resp.Info.Comms {
			// Only a single-node communicator has all its ranks here; commId 0
			// (tuner ABI before v5) does not identify one.
			if c.Nodes != 1 || c.ID == 0 {
				continue
			}
			if comms[c.ID] == nil {
				comms[c.ID] = &seen{ranks: c.Ranks}
			}
			comms[c.ID].n++
		}
	}
	var short []string
	for id, s := range comms {
		if uint32(s.n) < s.ranks {
			short = append(short, fmt.Sprintf("communicator %#x: %d of its %d ranks answered", id, s.n, s.ranks))
		}
	}
	if len(short) > 0 {
		sort.Strings(short)
		return nil, fmt.Errorf("ranks are missing from %s (their sockets are gone or in another directory); nothing was sent:\n  %s",
			dir, strings.Join(short, "\n  "))
	}
	return out, nil
}

// sendAll sends req to every target at once and prints each answer.
func sendAll(e *env, dir string, pids []target, req *control.Request, asJSON bool) error {
	type answer struct {
		resp *control.Response
		err  error
	}
	answers := make([]answer, len(pids))
	var wg sync.WaitGroup
	for i, pid := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].resp, answers[i].err = call(dir, pid, req)
		}()
	}
	wg.Wait()
	var failed int
	var results []map[string]any
	for i, pid := range pids {
		resp, err := answers[i].resp, answers[i].err
		if err != nil {
			failed++
			fmt.Fprintf(e.Stderr, "ncclbpf reload: %v\n", err)
			continue
		}
		r := resp.Reload
		if r == nil {
			r = &control.ReloadResult{}
		}
		if asJSON {
			results = append(results, map[string]any{"pid": string(pid), "reload": r})
			continue
		}
		if req.Op == control.OpCancel {
			fmt.Fprintf(e.Stdout, "pid %s: armed reload withdrawn; running %s sha256 %s\n", pid, r.Policy, short(r.SHA256))
			continue
		}
		fmt.Fprintf(e.Stdout, "pid %s: %s sha256 %s: %s\n", pid, r.Policy, short(r.SHA256), r.Attached)
		kept := "none"
		if len(r.Reused) > 0 {
			kept = strings.Join(r.Reused, ", ")
		}
		fmt.Fprintf(e.Stdout, "  load+verify+compile %s, publish %s, grace period %s; maps kept: %s\n",
			time.Duration(r.LoadNS).Round(time.Microsecond), time.Duration(r.PublishNS), time.Duration(r.GraceNS), kept)
		if r.Pending {
			fmt.Fprintf(e.Stdout, "  armed: communicators switch at call %d\n", r.AtSeq)
		}
	}
	if asJSON {
		if err := writeJSON(e, results); err != nil {
			return err
		}
	}
	if failed > 0 {
		return errSilentFailure
	}
	return nil
}

// resolveSeq reads --at-seq: N, or +K after the largest sequence the
// targets' communicators have reached.
func resolveSeq(dir string, pids []target, s string) (uint64, error) {
	rel := strings.HasPrefix(s, "+")
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil {
		return 0, usageErrorf("--at-seq %q: want N or +K", s)
	}
	if rel && n > control.MaxSeqAhead {
		return 0, usageErrorf("--at-seq %q: at most +%d", s, uint64(control.MaxSeqAhead))
	}
	if !rel {
		return n, nil
	}
	var hi uint64
	for _, pid := range pids {
		resp, err := call(dir, pid, &control.Request{Op: control.OpStats})
		if err != nil {
			return 0, err
		}
		if resp.Stats == nil {
			return 0, errors.New("empty stats answer")
		}
		if resp.Stats.Tuner.SeqMax > hi {
			hi = resp.Stats.Tuner.SeqMax
		}
	}
	return hi + n, nil
}

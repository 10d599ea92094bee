package ctl

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
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/internal/config"
)

// ReloadOptions are what ncclbpf reload is asked to do, as its flags of the
// same names spell them.
type ReloadOptions struct {
	Dir        string        // the control directory
	JSON       bool          // print JSON
	All        bool          // every process of the control directory
	Rollback   bool          // reload the object that ran before the last reload
	NoManifest bool          // ignore OBJ.activate
	Cancel     bool          // withdraw an armed --at-seq reload
	TimeoutSet bool          // Timeout was given (it then overrides a manifest's)
	AtSeq      string        // switch at this call: N, or +K from now
	Vars       []string      // NAME=VALUE settings of volatile const globals
	Timeout    time.Duration // longest wait for every communicator to reach AtSeq
	Expect     int           // with All: the number of processes that must answer
	Store      StoreOptions  // the job's store, to reach every rank of a multi-node job
}

// Reload sends the policy object args names (or a rollback or a cancel)
// to one process, every process of o.Dir, or every rank of o.Store, after
// loading, verifying and compiling it here; with an activation call the
// switch of several processes is two-phase. A target that failed is
// reported on e.Stderr and makes it return cli.ErrReported.
func Reload(e cli.Streams, args []string, o *ReloadOptions) error {
	vars := strings.Join(cli.SplitVars(o.Vars), ",")
	if o.Rollback && o.Cancel {
		return cli.Usagef("--rollback and --cancel exclude each other")
	}
	if o.Timeout <= 0 || o.Timeout > maxActivationTimeout {
		return cli.Usagef("--timeout %v: want more than 0 and at most %v", o.Timeout, maxActivationTimeout)
	}
	if o.Expect < 0 || (o.Expect > 0 && !o.All) {
		return cli.Usagef("--expect N goes with --all, N > 0")
	}
	want := 2
	if o.All {
		want--
	}
	if o.Rollback || o.Cancel {
		want--
	}
	if len(args) != want {
		return cli.Usagef("want PID|--all and OBJ (or --rollback PID|--all, --cancel PID|--all), got %d arguments", len(args))
	}
	if o.Store.URL != "" {
		if !o.All || o.Rollback || o.Cancel || o.AtSeq == "" {
			return cli.Usagef("--store goes with --all --at-seq N|+K OBJ (every rank of the job switches at one call)")
		}
		o.Store.Expect = o.Expect
		return reloadStore(e, args[0], vars, o)
	}
	var pids []target
	var err error
	if o.All {
		pids, err = allTargets(o.Dir, o.Expect)
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
	if o.Cancel {
		return sendAll(e, o.Dir, pids, &control.Cancel{}, o.JSON)
	}
	req := &control.Reload{Vars: vars, TimeoutMS: o.Timeout.Milliseconds()}
	if !o.Rollback {
		path := args[0]
		obj, err := checkObject(path, vars)
		if err != nil {
			return err
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if !o.NoManifest {
			if _, err := applyManifest(e.Stdout, args[0], o.AtSeq, o.TimeoutSet, req); err != nil {
				return err
			}
		}
		req.Object, req.Name = obj, path
	}
	if o.AtSeq != "" {
		n, err := resolveSeq(o.Dir, pids, o.AtSeq)
		if err != nil {
			return err
		}
		req.AtSeq = &n
	}
	if o.Rollback {
		return sendAll(e, o.Dir, pids, &control.Rollback{Vars: req.Vars, AtSeq: req.AtSeq, TimeoutMS: req.TimeoutMS}, o.JSON)
	}
	if o.All && req.AtSeq != nil {
		// Every process switches at N or none does (two-phase).
		names := make([]string, len(pids))
		for i, p := range pids {
			names[i] = string(p)
		}
		ranks, err := socketRanks(o.Dir, names, 30*time.Second)
		if err != nil {
			return err
		}
		res := control.TwoPhase(ranks, req.AsPrepare(""), control.SwitchOptions{})
		return reportSwitch(e, "reload", res, func(string) string {
			return fmt.Sprintf("%s: armed: communicators switch at call %d", req.Name, *req.AtSeq)
		}, o.JSON)
	}
	return sendAll(e, o.Dir, pids, req, o.JSON)
}

// checkObject reads the policy object at path and loads it here, as the
// plugin will (verified, JIT-compiled, with the --var values), before
// anything is sent; it returns the object's bytes.
func checkObject(path, vars string) ([]byte, error) {
	obj, err := config.ReadRegularFile(path, config.MaxPolicyBytes)
	if err != nil {
		return nil, err
	}
	opts := bundle.Options{Name: path, RequireNative: true}
	if vars != "" {
		vs, err := config.ParseVars(vars)
		if err != nil {
			return nil, cli.Usagef("--var: %v", err)
		}
		for _, v := range vs {
			opts.Vars = append(opts.Vars, bundle.Var{Name: v.Name, Value: v.Value})
		}
	}
	b, err := bundle.Load(obj, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (checked here; nothing was sent)", err)
	}
	b.Close()
	return obj, nil
}

// reloadStore is reload --all --at-seq over every rank of the job's store.
func reloadStore(e cli.Streams, path, vars string, o *ReloadOptions) error {
	req := &control.Reload{Vars: vars, TimeoutMS: o.Timeout.Milliseconds()}
	obj, err := checkObject(path, vars)
	if err != nil {
		return err
	}
	req.Object, req.Name = obj, filepath.Base(path)
	kv, ranks, err := openStoreRanks(&o.Store)
	if err != nil {
		return err
	}
	defer kv.Close()
	var hi uint64
	if strings.HasPrefix(o.AtSeq, "+") {
		if hi, err = furthestSeq(ranks, o.Store.RankTimeout); err != nil {
			return err
		}
	}
	n, err := seqFrom(o.AtSeq, hi)
	if err != nil {
		return err
	}
	req.AtSeq = &n
	res := storeSwitch(kv, &o.Store, ranks, req.AsPrepare(""))
	return reportSwitch(e, "reload", res, func(string) string {
		return fmt.Sprintf("%s: armed: communicators switch at call %d", req.Name, n)
	}, o.JSON)
}

// maxActivationTimeout bounds --timeout (the plugin refuses more).
const maxActivationTimeout = time.Hour

// allTargets lists the processes of dir, asking all at once; it fails if
// any socket did not answer, if expect > 0 and the count differs, or if a
// single-node communicator has ranks that no answering process reports.
func allTargets(dir string, expect int) ([]target, error) {
	rs, bad, err := queryAll(dir, &control.InfoQuery{}, 10*time.Second)
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
func sendAll(e cli.Streams, dir string, pids []target, req control.Payload, asJSON bool) error {
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
		if _, cancel := req.(*control.Cancel); cancel {
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
		if err := cli.WriteJSON(e.Stdout, results); err != nil {
			return err
		}
	}
	if failed > 0 {
		return cli.ErrReported
	}
	return nil
}

// resolveSeq reads --at-seq: N, or +K after the largest sequence the
// targets' communicators have reached.
func resolveSeq(dir string, pids []target, s string) (uint64, error) {
	rel := strings.HasPrefix(s, "+")
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil {
		return 0, cli.Usagef("--at-seq %q: want N or +K", s)
	}
	if rel && n > control.MaxSeqAhead {
		return 0, cli.Usagef("--at-seq %q: at most +%d", s, uint64(control.MaxSeqAhead))
	}
	if !rel {
		return n, nil
	}
	var hi uint64
	for _, pid := range pids {
		resp, err := call(dir, pid, &control.StatsQuery{})
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

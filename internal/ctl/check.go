package ctl

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
)

// CheckResult is one communicator's outcome, for --json.
type CheckResult struct {
	CommID   string                 `json:"comm_id"`
	Ranks    []string               `json:"ranks"`
	Compared bool                   `json:"compared"`
	Verdict  *control.LedgerVerdict `json:"verdict,omitempty"`
	Note     string                 `json:"note,omitempty"`
	// EnvDiffers names the ranks that NCCL's env plugin served different
	// NCCL_* values (their digests), when it did.
	EnvDiffers string `json:"environment_differs,omitempty"`
}

// envDiffers returns, when the ranks were served different NCCL
// environments by the env plugin, which rank got which (by digest), else "".
func envDiffers(names []string, digests []uint64) string {
	byDigest := map[uint64][]string{}
	var order []uint64
	for i, d := range digests {
		if _, ok := byDigest[d]; !ok {
			order = append(order, d)
		}
		byDigest[d] = append(byDigest[d], names[i])
	}
	if len(order) < 2 {
		return ""
	}
	parts := make([]string, len(order))
	for i, d := range order {
		what := fmt.Sprintf("environment %016x", d)
		if d == 0 {
			what = "no env plugin"
		}
		parts[i] = fmt.Sprintf("%s (%s)", strings.Join(byDigest[d], ", "), what)
	}
	return strings.Join(parts, "; ")
}

func parseCommID(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64)
	if err != nil {
		return 0, cli.Usagef("--comm %q: want a communicator id in hex (as ncclbpf stats prints it)", s)
	}
	return v, nil
}

// targets lists the pids named in args, or every process with a live
// control socket in dir.
func targets(dir string, args []string) ([]int, error) {
	if len(args) > 0 {
		var pids []int
		for _, a := range args {
			t, err := parsePID(a)
			if err != nil {
				return nil, err
			}
			pid, err := strconv.Atoi(string(t))
			if err != nil {
				return nil, cli.Usagef("%q: give the process id (a socket named for another PID namespace cannot be compared)", a)
			}
			pids = append(pids, pid)
		}
		return pids, nil
	}
	es, err := control.Scan(dir)
	if err != nil {
		return nil, fmt.Errorf("control directory %s: %w", dir, err)
	}
	var pids []int
	for _, en := range es {
		if c, err := control.Dial(en.Path); err == nil {
			c.Close()
			pids = append(pids, en.PID)
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("no process serves a control socket in %s", dir)
	}
	return pids, nil
}

// Check compares the decision ledgers of the processes named in args (or
// every process of dir), or with store.URL of every rank of the job's
// store, communicator by communicator (only comm, if given), and prints the
// verdicts. It returns cli.ErrReported when a communicator diverged or
// could not be compared.
func Check(e cli.Streams, args []string, dir string, asJSON bool, comm string, store *StoreOptions) error {
	var only *uint64
	if comm != "" {
		v, err := parseCommID(comm)
		if err != nil {
			return err
		}
		only = &v
	}
	if store.URL != "" {
		if len(args) > 0 {
			return cli.Usagef("--store checks every rank of the job: no PIDs")
		}
		kv, ranks, err := openStoreRanks(store)
		if err != nil {
			return err
		}
		defer kv.Close()
		return checkRanks(e, ranks, only, asJSON)
	}
	pids, err := targets(dir, args)
	if err != nil {
		return err
	}
	names := make([]string, len(pids))
	for i, pid := range pids {
		names[i] = strconv.Itoa(pid)
	}
	ranks, err := socketRanks(dir, names, 0)
	if err != nil {
		return err
	}
	return checkRanks(e, ranks, only, asJSON)
}

// checkTimeout bounds each rank's answer to check.
const checkTimeout = 10 * time.Second

// checkRanks compares the decision ledgers of ranks, communicator by
// communicator, and prints the verdicts.
func checkRanks(e cli.Streams, ranks []control.Rank, only *uint64, asJSON bool) error {
	req := &control.LedgerQuery{}
	if only != nil {
		req.Comm = control.CommKey(*only)
	}
	views := make([][]control.LedgerView, len(ranks))
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := r.Call(req, checkTimeout)
			if err == nil {
				views[i] = resp.Ledger
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	type member struct {
		rank int
		view control.LedgerView
	}
	groups := map[uint64][]member{}
	answered := 0
	for i, r := range ranks {
		if errs[i] != nil {
			fmt.Fprintf(e.Stderr, "ncclbpf check: %s: %v (left out)\n", r.Name(), errs[i])
			continue
		}
		answered++
		for _, v := range views[i] {
			groups[v.CommID] = append(groups[v.CommID], member{i, v})
		}
	}
	ids := make([]uint64, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var results []CheckResult
	bad := false
	for _, id := range ids {
		ms := groups[id]
		r := CheckResult{CommID: control.CommKey(id)}
		members := make([]control.Member, len(ms))
		for i, m := range ms {
			r.Ranks = append(r.Ranks, ranks[m.rank].Name())
			members[i] = control.Member{Name: ranks[m.rank].Name(), LedgerView: m.view}
		}
		if len(ms) < 2 {
			r.Note = "only one process has this communicator: nothing to compare"
			results = append(results, r)
			continue
		}
		digests := make([]uint64, len(ms))
		for i, m := range ms {
			digests[i] = m.view.EnvDigest
		}
		if r.EnvDiffers = envDiffers(r.Ranks, digests); r.EnvDiffers != "" {
			bad = true
		}
		if n := ms[0].view.NRanks; n > 0 && uint32(len(ms)) < n {
			r.Note = fmt.Sprintf("%d of its %d ranks answered: the others are not compared", len(ms), n)
		}
		fetch := func(a, b uint64) ([][]control.Decision, error) {
			out := make([][]control.Decision, len(ms))
			fe := make([]error, len(ms))
			var wg sync.WaitGroup
			for i, m := range ms {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := ranks[m.rank].Call(&control.LedgerQuery{Comm: control.CommKey(id),
						RecordsFrom: a, RecordsTo: b}, checkTimeout)
					if err == nil && len(resp.Ledger) == 1 {
						out[i] = resp.Ledger[0].Records
					} else if err == nil {
						err = fmt.Errorf("communicator %s is gone", control.CommKey(id))
					}
					if err != nil {
						fe[i] = fmt.Errorf("%s: %w", ranks[m.rank].Name(), err)
					}
				}()
			}
			wg.Wait()
			return out, errors.Join(fe...)
		}
		v, err := control.CheckLedgers(members, fetch)
		if err != nil {
			return err
		}
		r.Verdict = &v
		r.Compared = v.Through >= v.From && v.Note == ""
		if !r.Compared || !v.Agree {
			bad = true
		}
		results = append(results, r)
	}
	if only != nil && len(results) == 0 {
		return fmt.Errorf("communicator %#x: no process has it", *only)
	}
	if len(results) == 0 {
		return fmt.Errorf("no live communicator in %d processes", answered)
	}
	if asJSON {
		if err := cli.WriteJSON(e.Stdout, results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			who := strings.Join(r.Ranks, ", ")
			v := r.Verdict
			switch {
			case v == nil:
				fmt.Fprintf(e.Stdout, "comm %s: %s: %s\n", r.CommID, who, r.Note)
				continue
			case !r.Compared:
				fmt.Fprintf(e.Stdout, "comm %s: %s: NOT COMPARED: %s\n", r.CommID, who, v.Note)
			case v.Agree:
				fmt.Fprintf(e.Stdout, "comm %s: %s: AGREE (calls %d..%d compared, epoch %q from call %d)\n",
					r.CommID, who, v.From, v.Through, v.Epoch.ID, v.Epoch.Start)
			default:
				fmt.Fprintf(e.Stdout, "comm %s: %s: DIVERGED (epoch %q from call %d; calls %d..%d compared)\n  %s\n",
					r.CommID, who, v.Epoch.ID, v.Epoch.Start, v.From, v.Through,
					strings.ReplaceAll(control.FormatFirstDivergence(v.Divergence), "\n", "\n  "))
			}
			if r.EnvDiffers != "" {
				fmt.Fprintf(e.Stdout, "  ENVIRONMENT DIFFERS: NCCL's env plugin served these ranks different NCCL_* values "+
					"(NCCLBPF_ENV_FILE or the process environment), a known cause of hangs: %s\n", r.EnvDiffers)
			}
			if r.Note != "" {
				fmt.Fprintf(e.Stdout, "  note: %s\n", r.Note)
			}
		}
	}
	if bad {
		return cli.ErrReported
	}
	return nil
}

// pidTarget names process pid for call.
func pidTarget(pid int) target { return target(strconv.Itoa(pid)) }

// pidTargets names processes for the commands that take targets.
func pidTargets(pids []int) []target {
	out := make([]target, len(pids))
	for i, p := range pids {
		out[i] = pidTarget(p)
	}
	return out
}

package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "check [--dir DIR] [--json] [--comm ID] [PID...]",
		Summary: "compare the tuner decisions of every process of each communicator on this host",
		Help: `Every communicator folds each tuner decision (call sequence, collective,
bytes, algorithm, protocol, channels, chunk size) into a rolling digest and
keeps its last 256 decisions. check reads them from every process (or the
PIDs given), groups them by communicator id, and compares the processes of
each communicator over the calls all of them still keep (the last call of
each is left out: its chunk size may still come). Equal decisions and equal
digests there mean the processes decided alike on every call so far.

On a difference it prints the first sequence number where two processes
decided differently and both decisions; when the kept decisions agree but
the digests do not, the first difference is older than what was kept, and it
says so. Communicators seen in a single process are listed, not compared.

Exit status: 0 all compared communicators consistent, 1 a divergence (or
nothing could be compared), 2 usage.

Communicator ids are NCCL's (tuner ABI v5 and later); with older ABIs every
communicator has id 0 and processes cannot be told apart by communicator:
compare them only when each process has one communicator.`,
		Examples: []string{"ncclbpf check", "ncclbpf check --comm 0x5e5e", "ncclbpf check --json 4242 4243"},
		Complete: func([]string) []string { return controlNames() },
		Setup: func(fs *pflag.FlagSet) runFunc {
			dir, asJSON := controlFlags(fs)
			comm := fs.String("comm", "", "only this communicator `ID` (hex, as ncclbpf stats prints it)")
			return func(e *env, args []string) error { return runCheck(e, args, *dir, *asJSON, *comm) }
		},
	})
}

// checkResult is one communicator's outcome, for --json.
type checkResult struct {
	CommID      string               `json:"comm_id"`
	PIDs        []int                `json:"pids"`
	Compared    bool                 `json:"compared"`
	Consistent  bool                 `json:"consistent"`
	From        uint64               `json:"from,omitempty"`
	Through     uint64               `json:"through,omitempty"`
	Divergences []control.Divergence `json:"divergences,omitempty"`
	Note        string               `json:"note,omitempty"`
}

func parseCommID(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64)
	if err != nil {
		return 0, usageErrorf("--comm %q: want a communicator id in hex (as ncclbpf stats prints it)", s)
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
				return nil, usageErrorf("%q: give the process id (a socket named for another PID namespace cannot be compared)", a)
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

func runCheck(e *env, args []string, dir string, asJSON bool, comm string) error {
	var only *uint64
	if comm != "" {
		v, err := parseCommID(comm)
		if err != nil {
			return err
		}
		only = &v
	}
	pids, err := targets(dir, args)
	if err != nil {
		return err
	}
	byPID := map[int][]control.CommDecisions{}
	for _, pid := range pids {
		resp, err := call(dir, pidTarget(pid), &control.Request{Op: control.OpDecisions})
		if err != nil {
			fmt.Fprintf(e.Stderr, "ncclbpf check: %v (left out)\n", err)
			continue
		}
		byPID[pid] = resp.Decisions
	}
	ids, groups := control.GroupByComm(byPID)
	var results []checkResult
	bad := false
	for _, id := range ids {
		if only != nil && id != *only {
			continue
		}
		ps := groups[id]
		r := checkResult{CommID: fmt.Sprintf("%#x", id)}
		for _, p := range ps {
			r.PIDs = append(r.PIDs, p.PID)
		}
		if len(ps) < 2 {
			r.Note = "only one process has this communicator: nothing to compare"
			results = append(results, r)
			continue
		}
		v, err := control.Compare(ps)
		if err != nil {
			return err
		}
		r.Compared, r.Consistent, r.From, r.Through, r.Divergences = v.Comparable, v.Consistent, v.From, v.Through, v.Divergences
		if !v.Comparable {
			r.Note = "the processes keep no common settled call (too far apart, or too few calls yet)"
			bad = true
		} else if !v.Consistent {
			bad = true
		}
		results = append(results, r)
	}
	if only != nil && len(results) == 0 {
		return fmt.Errorf("communicator %#x: no process has it", *only)
	}
	if len(results) == 0 {
		return fmt.Errorf("no live communicator in %d processes", len(byPID))
	}
	if asJSON {
		if err := writeJSON(e, results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			pidList := strings.Trim(fmt.Sprint(r.PIDs), "[]")
			switch {
			case r.Note != "" && !r.Compared && len(r.PIDs) < 2:
				fmt.Fprintf(e.Stdout, "comm %s: pid %s: %s\n", r.CommID, pidList, r.Note)
			case !r.Compared:
				fmt.Fprintf(e.Stdout, "comm %s: pids %s: NOT COMPARED: %s\n", r.CommID, pidList, r.Note)
			case r.Consistent:
				fmt.Fprintf(e.Stdout, "comm %s: pids %s: consistent (calls %d..%d compared, digests equal)\n",
					r.CommID, pidList, r.From, r.Through)
			default:
				fmt.Fprintf(e.Stdout, "comm %s: pids %s: DIVERGED (calls %d..%d compared)\n", r.CommID, pidList, r.From, r.Through)
				for _, dv := range r.Divergences {
					fmt.Fprintf(e.Stdout, "  %s\n", strings.ReplaceAll(control.FormatDivergence(dv), "\n", "\n  "))
				}
			}
		}
	}
	if bad {
		return errSilentFailure
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

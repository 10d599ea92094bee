package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

// Two-phase switches (control/twophase.go) from the CLI: agree and reload
// --all --at-seq switch every rank at one call or none.

// busyRetry is a rank whose prepare is retried while it is still
// completing an earlier switch (its activation not yet passed), until
// the deadline.
type busyRetry struct {
	control.Rank
	deadline time.Time
}

func (b busyRetry) Call(req *control.Request, timeout time.Duration) (*control.Response, error) {
	for {
		resp, err := b.Rank.Call(req, timeout)
		if err == nil || req.Op != control.OpPrepare || !strings.Contains(err.Error(), "another reload is in progress") ||
			time.Now().After(b.deadline) {
			return resp, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// socketRanks names the local processes given by their socket names.
func socketRanks(dir string, names []string, busyWait time.Duration) ([]control.Rank, error) {
	out := make([]control.Rank, 0, len(names))
	deadline := time.Now().Add(busyWait)
	for _, n := range names {
		p, err := control.NamePath(dir, n)
		if err != nil {
			return nil, err
		}
		out = append(out, busyRetry{Rank: control.SocketRank{Label: "pid " + n, Path: p}, deadline: deadline})
	}
	return out, nil
}

// reportSwitch prints the outcome of a switch; a round that aborted is an
// error (exit 1).
func reportSwitch(e *env, cmd string, res control.SwitchResult, line func(name string) string, asJSON bool) error {
	if asJSON {
		if err := writeJSON(e, res); err != nil {
			return err
		}
	} else if res.Committed {
		for _, r := range res.Ranks {
			fmt.Fprintf(e.Stdout, "%s: %s\n", r.Name, line(r.Name))
		}
		fmt.Fprintf(e.Stdout, "committed %s: %d ranks, activation call %d (prepare %v, commit %v)\n", res.Tx, len(res.Ranks), res.AtSeq,
			time.Duration(res.PrepareNS).Round(time.Microsecond), time.Duration(res.CommitNS).Round(time.Microsecond))
	}
	if res.Committed {
		return nil
	}
	fmt.Fprintf(e.Stderr, "ncclbpf %s: aborted %s: no rank switches at call %d: %s\n", cmd, res.Tx, res.AtSeq, res.Reason)
	if len(res.Switched) > 0 {
		fmt.Fprintf(e.Stderr, "ncclbpf %s: WARNING: %s had already switched at call %d before the abort reached them: "+
			"they now decide differently from the other ranks; switch every rank again (ncclbpf reload --all --at-seq) "+
			"and confirm with ncclbpf check\n", cmd, strings.Join(res.Switched, ", "), res.AtSeq)
	}
	return errSilentFailure
}

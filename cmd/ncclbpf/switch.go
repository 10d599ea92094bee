package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/spf13/pflag"
)

// storeFlags declares --store and --job: reach every rank of a multi-node
// job through its store instead of this host's control sockets.
func storeFlags(fs *pflag.FlagSet, store, job *string) {
	fs.StringVar(store, "store", os.Getenv(control.EnvStore), "the job's `STORE`: tcpstore (MASTER_ADDR:MASTER_PORT), tcpstore://HOST:PORT (default $NCCLBPF_STORE)")
	fs.StringVar(job, "job", "", "the job's `ID` in the store (default $NCCLBPF_JOB, else $TORCHELASTIC_RUN_ID)")
}

// openStoreRanks connects to the job's store and lists its ranks.
func openStoreRanks(url, job string) (control.Store, []control.Rank, error) {
	kv, err := control.OpenStore(url, os.Getenv, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	ranks, err := control.StoreRanks(kv, control.JobPrefix(job, os.Getenv))
	if err != nil {
		kv.Close()
		return nil, nil, fmt.Errorf("store %s: %w", url, err)
	}
	return kv, ranks, nil
}

// seqFrom reads --at-seq against the furthest call hi the ranks reported.
func seqFrom(s string, hi uint64) (uint64, error) {
	rel := strings.HasPrefix(s, "+")
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil || (rel && n > control.MaxSeqAhead) {
		return 0, usageErrorf("--at-seq %q: want N or +K (K at most %d)", s, uint64(control.MaxSeqAhead))
	}
	if rel {
		return hi + n, nil
	}
	return n, nil
}

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

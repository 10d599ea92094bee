package ctl

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	_ "github.com/ncclbpf/ncclbpf/internal/etcdv3" // etcd:// through etcd's own client
)

// StoreOptions are the flags of a command that reaches every rank of a
// multi-node job through its store instead of this host's control sockets.
type StoreOptions struct {
	URL         string        // the job's store: tcpstore, tcpstore://HOST:PORT, etcd://HOST:PORT
	Job         string        // the job's id in the store ("": $NCCLBPF_JOB, else $TORCHELASTIC_RUN_ID)
	Expect      int           // the number of ranks the job must have (0: the WORLD_SIZE they registered)
	RankTimeout time.Duration // the longest wait for each rank's answer in each phase
}

// openStoreRanks connects to the job's store and lists its live ranks
// (all of its world's, or expect of them).
func openStoreRanks(o *StoreOptions) (control.Store, []control.Rank, error) {
	if o.RankTimeout <= 0 {
		return nil, nil, cli.Usagef("--rank-timeout %v: want more than 0", o.RankTimeout)
	}
	kv, err := control.OpenStore(o.URL, os.Getenv, 5*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (nothing was sent)", err)
	}
	ranks, err := control.StoreRanks(kv, control.JobPrefix(o.Job, os.Getenv), o.Expect)
	if err != nil {
		kv.Close()
		return nil, nil, fmt.Errorf("store %s: %w", o.URL, err)
	}
	return kv, ranks, nil
}

// storeSwitch runs a two-phase switch over the ranks of the job's store,
// its decision recorded there.
func storeSwitch(kv control.Store, o *StoreOptions, ranks []control.Rank, req *control.Prepare) control.SwitchResult {
	// the ranks as they are, so that their requests go out batched
	return control.TwoPhase(ranks, req, control.SwitchOptions{
		Timeout:   o.RankTimeout,
		Decide:    control.StoreDecider(kv, control.JobPrefix(o.Job, os.Getenv)),
		BusyUntil: time.Now().Add(30 * time.Second),
	})
}

// furthestSeq asks every rank, at once, for the furthest call it reached.
func furthestSeq(ranks []control.Rank, timeout time.Duration) (uint64, error) {
	his := make([]uint64, len(ranks))
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := r.Call(&control.StatsQuery{}, timeout)
			if err == nil && st.Stats == nil {
				err = errors.New("empty stats answer")
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: stats: %w (nothing was switched)", r.Name(), err)
				return
			}
			his[i] = st.Stats.Tuner.SeqMax
		}()
	}
	wg.Wait()
	var hi uint64
	for i := range ranks {
		if errs[i] != nil {
			return 0, errs[i]
		}
		hi = max(hi, his[i])
	}
	return hi, nil
}

// seqFrom reads --at-seq against the furthest call hi the ranks reported.
func seqFrom(s string, hi uint64) (uint64, error) {
	rel := strings.HasPrefix(s, "+")
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil || (rel && n > control.MaxSeqAhead) {
		return 0, cli.Usagef("--at-seq %q: want N or +K (K at most %d)", s, uint64(control.MaxSeqAhead))
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

// Call sends req to the rank, retrying a prepare while the rank is still
// completing an earlier switch.
func (b busyRetry) Call(req control.Payload, timeout time.Duration) (*control.Response, error) {
	for {
		resp, err := b.Rank.Call(req, timeout)
		if err == nil || req.Op() != control.OpPrepare || !strings.Contains(err.Error(), "another reload is in progress") ||
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
func reportSwitch(e cli.Streams, cmd string, res control.SwitchResult, line func(name string) string, asJSON bool) error {
	if asJSON {
		if err := cli.WriteJSON(e.Stdout, res); err != nil {
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
	return cli.ErrReported
}

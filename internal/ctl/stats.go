package ctl

import (
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
)

// Stats prints the counters of process args[0]: its policy, hook calls,
// guardrail hits, reloads and, for cost > 0, the programs' cost measured
// over that long.
func Stats(e cli.Streams, args []string, dir string, asJSON bool, cost time.Duration) error {
	if len(args) != 1 {
		return cli.Usagef("want one PID, got %d arguments", len(args))
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	if cost < 0 || cost > time.Minute {
		return cli.Usagef("--cost %v: want up to 1m", cost)
	}
	resp, err := call(dir, pid, &control.StatsQuery{SampleMS: cost.Milliseconds()})
	if err != nil {
		return err
	}
	st := resp.Stats
	if st == nil {
		return fmt.Errorf("pid %s: empty answer", pid)
	}
	if asJSON {
		return cli.WriteJSON(e.Stdout, st)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 1, ' ', 0)
	in := st.Info
	fmt.Fprintf(tw, "pid\t%d (%s), plugin up %s\n", in.PID, in.Exe, time.Since(in.Started).Round(time.Second))
	if in.Running {
		fmt.Fprintf(tw, "policy\t%s sha256 %s (%d bytes), loaded %s\n", in.Policy, short(in.SHA256), in.Size,
			in.LoadedAt.Local().Format(time.RFC3339))
		fmt.Fprintf(tw, "attached\t%s\n", in.Attached)
	} else {
		fmt.Fprintf(tw, "policy\tnone running: %s\n", in.LoadMessage)
	}
	if in.PendingAtSeq != nil {
		fmt.Fprintf(tw, "pending\treload armed, switching at seq %d\n", *in.PendingAtSeq)
	}
	t := st.Tuner
	fmt.Fprintf(tw, "tuner\t%d comms live (%d total), seq %d..%d\n", t.CommsLive, t.CommsTotal, t.SeqMin, t.SeqMax)
	fmt.Fprintf(tw, "  getCollInfo\t%d calls, %d ran the policy, %d applied, %d rejected, %d clamped\n",
		t.Calls, t.PolicyCalls, t.Applied, t.Rejected, t.Clamped)
	fmt.Fprintf(tw, "  getChunkSize\t%d calls, %d applied, %d rejected\n", t.ChunkCalls, t.ChunkApplied, t.ChunkRejected)
	for _, d := range st.Digests {
		if d.DigestSeq < 0 {
			fmt.Fprintf(tw, "  comm %#x	%d ranks, seq %d, no decision recorded yet\n", d.CommID, d.NRanks, d.Seq)
			continue
		}
		fmt.Fprintf(tw, "  comm %#x	%d ranks, seq %d, decision digest %016x through seq %d\n", d.CommID, d.NRanks, d.Seq,
			d.Digest, d.DigestSeq)
	}
	p := st.Profiler
	names := make([]string, 0, len(p.Calls))
	for n := range p.Calls {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(tw, "profiler\tABI v%d, mask %#x, %d contexts, %d events dropped, %d forced, %d orphans\n",
		p.Version, p.Mask, p.Contexts, p.EventsDropped, p.EventsForced, p.Orphans)
	for _, n := range names {
		fmt.Fprintf(tw, "  %s\t%d calls\n", n, p.Calls[n])
	}
	r := st.Reload
	fmt.Fprintf(tw, "reload\t%d ok, %d failed, %d bundles alive, %d kept (no grace period)\n", r.Reloads, r.Failures,
		r.LiveBundles, r.Leaked)
	if r.Reloads > 0 {
		fmt.Fprintf(tw, "  publish\tlast %s, max %s; grace period %s\n", time.Duration(r.LastPublishNS),
			time.Duration(r.MaxPublishNS), time.Duration(r.LastGraceNS))
	}
	if r.LastActivated != "" {
		fmt.Fprintf(tw, "  activated\t%s (%d forced by timeout)\n", r.LastActivated, r.ForcedActivations)
	}
	if r.Previous != "" {
		fmt.Fprintf(tw, "  rollback to\t%s\n", r.Previous)
	}
	if r.LastError != "" {
		fmt.Fprintf(tw, "  last error\t%s\n", r.LastError)
	}
	for i, c := range st.Cost {
		if i == 0 {
			fmt.Fprintf(tw, "cost\tsampled over %dms, 1 call in 64 per thread\n", c.WindowMS)
		}
		fmt.Fprintf(tw, "  %s\t%d samples, mean %.1f ns, max %.1f ns\n", c.Hook, c.Samples, c.MeanNS, c.MaxNS)
	}
	return tw.Flush()
}

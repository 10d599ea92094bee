package main

import (
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "stats [--dir DIR] [--json] [--cost D] PID",
		Summary: "show a process's policy, hook call counts, guardrail hits and reloads",
		Help: `The counters come from the C shim (relaxed per-communicator counters,
summed on request) and from the reload machinery of the process:

  tuner      getCollInfo calls, those that ran a program, decisions applied,
             rejected (NCCL could not take them: guardrail) and clamped
             channel counts; getChunkSize the same; the range of
             per-communicator call sequences (for reload --at-seq); per
             communicator, the digest of its decisions through a call
             (compare processes with 'ncclbpf check')
  profiler   program calls per profiler hook, events dropped or forced
  reload     reloads, failures and the last error, publish and grace-period
             times, bundles alive, what rollback would load
  cost       with --cost D: each hook's program wrapped in a timing
             trampoline for D (1 call in 64 per thread timed), then put back;
             nothing is timed otherwise`,
		Examples: []string{"ncclbpf stats 4242", "ncclbpf stats --json 4242", "ncclbpf stats --cost 1s 4242  # also time each hook's program"},
		Complete: func([]string) []string { return controlNames() },
		Setup: func(fs *pflag.FlagSet) runFunc {
			dir, asJSON := controlFlags(fs)
			cost := fs.Duration("cost", 0, "first time each hook's program for this long (`D`, e.g. 2s) (1 call in 64 per thread; at most 1m)")
			return func(e *env, args []string) error { return runStats(e, args, *dir, *asJSON, cost) }
		},
	})
}

func runStats(e *env, args []string, dir string, asJSON bool, cost *time.Duration) error {
	if len(args) != 1 {
		return usageErrorf("want one PID, got %d arguments", len(args))
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	if *cost < 0 || *cost > time.Minute {
		return usageErrorf("--cost %v: want up to 1m", *cost)
	}
	resp, err := call(dir, pid, &control.Request{Op: control.OpStats, SampleMS: cost.Milliseconds()})
	if err != nil {
		return err
	}
	st := resp.Stats
	if st == nil {
		return fmt.Errorf("pid %s: empty answer", pid)
	}
	if asJSON {
		return writeJSON(e, st)
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

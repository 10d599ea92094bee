package main

import (
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

func init() {
	register(&command{
		Name:    "stats",
		Args:    "[--dir DIR] [--json] PID",
		Summary: "show a process's policy, hook call counts, guardrail hits and reloads",
		Help: `The counters come from the C shim (relaxed per-communicator counters,
summed on request) and from the reload machinery of the process:

  tuner      getCollInfo calls, those that ran a program, decisions applied,
             rejected (NCCL could not take them: guardrail) and clamped
             channel counts; getChunkSize the same; the range of
             per-communicator call sequences (for reload --at-seq)
  profiler   program calls per profiler hook, events dropped or forced
  reload     reloads, failures and the last error, publish and grace-period
             times, bundles alive, what rollback would load`,
		Examples: []string{"ncclbpf stats 4242", "ncclbpf stats --json 4242"},
		Run:      runStats,
	})
}

func runStats(e *env, args []string) error {
	fs := e.flags()
	dir, asJSON := controlFlags(fs)
	args, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usageErrorf("want one PID, got %d arguments", len(args))
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	resp, err := call(*dir, pid, &control.Request{Op: control.OpStats})
	if err != nil {
		return err
	}
	st := resp.Stats
	if st == nil {
		return fmt.Errorf("pid %d: empty answer", pid)
	}
	if *asJSON {
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
	return tw.Flush()
}

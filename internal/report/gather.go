// Package report writes `ncclbpf report`: one self-contained HTML page
// (inline SVG and CSS, a few lines of inline script, nothing fetched) that
// shows, for one process or every ncclbpf process of a node, the decision
// map (size bucket by collective, coloured by the outcome the policy chose
// most, crossed where that cell cost more than NCCL's cheapest), latency
// versus size per algorithm and protocol from the profiler's histograms,
// and the running policy's maps. The charts are drawn by gonum.org/v1/plot
// and inlined as SVG.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

// Process is what the report shows of one process.
type Process struct {
	Metrics *control.Metrics
	// Maps are the running policy's maps (maps.MapDump as JSON).
	Maps []json.RawMessage
	// MapErrors say which maps could not be read, and why.
	MapErrors []string
}

// Gather reads the processes of the control directory dir (all of them if
// pids is empty), each bounded by timeout. Stale sockets are skipped; a
// named process that does not answer is an error, others are reported in
// the returned warnings.
func Gather(dir string, pids []int, timeout time.Duration) ([]Process, []string, error) {
	entries, err := control.Scan(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("control directory %s: %w", dir, err)
	}
	if len(pids) > 0 {
		want := map[int]bool{}
		for _, p := range pids {
			want[p] = true
		}
		var sel []control.Entry
		for _, e := range entries {
			if want[e.PID] {
				sel = append(sel, e)
				delete(want, e.PID)
			}
		}
		for p := range want {
			return nil, nil, fmt.Errorf("pid %d: no control socket in %s", p, dir)
		}
		entries = sel
	}
	var out []Process
	var warns []string
	for _, r := range control.QueryAll(entries, &control.MetricsQuery{}, timeout) {
		if r.Err != nil || r.Resp == nil || r.Resp.Metrics == nil {
			if errors.Is(r.Err, control.ErrStale) && len(pids) == 0 {
				continue
			}
			err := r.Err
			if err == nil {
				err = errors.New("no metrics in the answer")
			}
			if len(pids) > 0 {
				return nil, nil, fmt.Errorf("pid %d: %w", r.PID, err)
			}
			warns = append(warns, fmt.Sprintf("pid %d: %v", r.PID, err))
			continue
		}
		p := Process{Metrics: r.Resp.Metrics}
		p.Maps, p.MapErrors = readMaps(r.Entry, timeout)
		out = append(out, p)
	}
	if len(out) == 0 && len(warns) == 0 {
		return nil, nil, fmt.Errorf("no ncclbpf process in %s", dir)
	}
	return out, warns, nil
}

// readMaps dumps every map of the process's running policy.
func readMaps(e control.Entry, timeout time.Duration) ([]json.RawMessage, []string) {
	rs := control.QueryAll([]control.Entry{e}, &control.MapList{}, timeout)
	if rs[0].Err != nil || rs[0].Resp == nil {
		return nil, []string{fmt.Sprintf("map list: %v", rs[0].Err)}
	}
	var out []json.RawMessage
	var errs []string
	for _, m := range rs[0].Resp.Maps {
		d := control.QueryAll([]control.Entry{e}, &control.MapDump{Map: m.Name}, timeout)[0]
		if d.Err != nil || d.Resp == nil || len(d.Resp.Dump) == 0 {
			errs = append(errs, fmt.Sprintf("map %s: %v", m.Name, d.Err))
			continue
		}
		out = append(out, d.Resp.Dump)
	}
	return out, errs
}

package ctl

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
)

// target is a process given on the command line: its pid, or the name of
// its socket ("PID-nsINODE") when its pid is taken in the directory by a
// process of another PID namespace (ps shows that name).
type target string

// parsePID reads a PID (or socket name) argument.
func parsePID(s string) (target, error) {
	if _, err := control.NamePath("", s); err != nil {
		return "", cli.Usagef("%q is not a process id (or a control socket name as ps shows it)", s)
	}
	return target(s), nil
}

// callTimeout bounds one request to one process: a process that accepts
// and never answers costs this, not more.
var callTimeout = 2 * time.Minute

// call sends one request to process pid and explains connection failures.
func call(dir string, pid target, req control.Payload) (*control.Response, error) {
	path, err := control.NamePath(dir, string(pid))
	if err != nil {
		return nil, err
	}
	c, err := control.Dial(path)
	if err != nil {
		switch {
		case errors.Is(err, control.ErrNoProcess):
			return nil, fmt.Errorf("pid %s: no control socket in %s: the process is not running libncclbpf.so, runs it with %s=0, or uses another %s", pid, dir, control.EnvControl, control.EnvDir)
		case errors.Is(err, control.ErrStale):
			return nil, fmt.Errorf("pid %s: the process is gone (stale socket %s)", pid, path)
		case errors.Is(err, control.ErrPermission):
			return nil, fmt.Errorf("pid %s: %w (run as that user)", pid, control.ErrPermission)
		}
		return nil, fmt.Errorf("pid %s: %w", pid, err)
	}
	defer c.Close()
	c.Timeout = callTimeout
	resp, err := c.Call(req)
	if err != nil {
		return resp, fmt.Errorf("pid %s: %w", pid, err)
	}
	return resp, nil
}

// queryAll asks every process of dir at once (each bounded by timeout) and
// returns those that answered, and one error line per socket that did not.
func queryAll(dir string, req control.Payload, timeout time.Duration) ([]control.Result, []string, error) {
	if err := checkControlDir(dir); err != nil {
		return nil, nil, err
	}
	entries, err := control.Scan(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("control directory %s: %w", dir, err)
	}
	var ok []control.Result
	var bad []string
	for _, r := range control.QueryAll(entries, req, timeout) {
		if r.Err != nil {
			bad = append(bad, fmt.Sprintf("pid %s: %v", r.Name, r.Err))
			continue
		}
		ok = append(ok, r)
	}
	return ok, bad, nil
}

// dirHint says where the processes' control directory is.
const dirHint = "a process uses $" + control.EnvDir + " of its own environment, else $XDG_RUNTIME_DIR/ncclbpf, else /tmp/ncclbpf-UID: give its directory with --dir"

// checkControlDir refuses a control directory that does not exist or is
// no directory, with where the processes' directory is.
func checkControlDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("control directory %s does not exist: no process running libncclbpf.so has used it; %s", dir, dirHint)
	case err != nil:
		return fmt.Errorf("control directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("control directory %s is not a directory; %s", dir, dirHint)
	}
	return nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// PS lists the processes that serve a control socket in dir, with their
// policies; every process is asked at once, each for at most timeout.
func PS(e cli.Streams, args []string, dir string, asJSON, verbose bool, timeout time.Duration) error {
	if len(args) != 0 {
		return cli.Usagef("ps takes no arguments")
	}
	rs, bad, err := queryAll(dir, &control.InfoQuery{}, timeout)
	if err != nil {
		return err
	}
	if verbose {
		for _, b := range bad {
			fmt.Fprintf(e.Stderr, "ncclbpf ps: %s\n", b)
		}
	}
	switch {
	case len(rs) == 0 && len(bad) == 0:
		fmt.Fprintf(e.Stderr, "ncclbpf ps: no control socket in %s: no process running libncclbpf.so uses this directory; %s\n", dir, dirHint)
	case len(rs) == 0 && !verbose:
		fmt.Fprintf(e.Stderr, "ncclbpf ps: %d control socket(s) in %s, none answered (-v says why)\n", len(bad), dir)
	}
	infos := []control.Info{}
	names := []string{}
	for _, r := range rs {
		if r.Resp.Info != nil {
			infos = append(infos, *r.Resp.Info)
			names = append(names, r.Name)
		}
	}
	if asJSON {
		return cli.WriteJSON(e.Stdout, infos)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tPOLICY\tSHA256\tLOADED\tUPTIME\tATTACHED")
	for i, in := range infos {
		policy, loaded := "-", "-"
		if in.Running {
			policy = in.Policy
			loaded = in.LoadedAt.Local().Format("15:04:05")
		}
		if in.PendingAtSeq != nil {
			policy += fmt.Sprintf(" (switching at seq %d)", *in.PendingAtSeq)
		}
		if in.Control == "read-only" {
			policy += " [read-only]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", names[i], policy, short(in.SHA256), loaded,
			time.Since(in.Started).Round(time.Second), in.Attached)
	}
	return tw.Flush()
}

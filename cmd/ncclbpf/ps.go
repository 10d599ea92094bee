package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

func init() {
	register(&command{
		Name:    "ps",
		Args:    "[--dir DIR] [--json]",
		Summary: "list the processes running libncclbpf.so and their policies",
		Help: `Every process that loads libncclbpf.so serves a control socket named by
its pid in the control directory ($NCCLBPF_CONTROL_DIR, else
$XDG_RUNTIME_DIR/ncclbpf, else /tmp/ncclbpf-UID). ps connects to each and
lists the pid, the policy, its hash, when it was loaded, how long the plugin
has been up and the program attached to each hook. Sockets of processes that
are gone are skipped (and say so with -v).`,
		Examples: []string{"ncclbpf ps", "ncclbpf ps --json"},
		Run:      runPs,
	})
}

// controlFlags adds the flags every control command has.
func controlFlags(fs *flag.FlagSet) (dir *string, asJSON *bool) {
	dir = fs.String("dir", control.DefaultDir(os.Getenv), "control socket directory")
	asJSON = fs.Bool("json", false, "print JSON")
	return dir, asJSON
}

// parsePID reads a PID argument.
func parsePID(s string) (int, error) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, usageErrorf("%q is not a process id", s)
	}
	return pid, nil
}

// call sends one request to process pid and explains connection failures.
func call(dir string, pid int, req *control.Request) (*control.Response, error) {
	c, err := control.DialPID(dir, pid)
	if err != nil {
		switch {
		case errors.Is(err, control.ErrNoProcess):
			return nil, fmt.Errorf("pid %d: no control socket in %s: the process is not running libncclbpf.so, runs it with %s=0, or uses another %s", pid, dir, control.EnvControl, control.EnvDir)
		case errors.Is(err, control.ErrStale):
			return nil, fmt.Errorf("pid %d: the process is gone (stale socket %s)", pid, control.SocketPath(dir, pid))
		case errors.Is(err, control.ErrPermission):
			return nil, fmt.Errorf("pid %d: permission denied: the process belongs to another user (run as that user)", pid)
		}
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	defer c.Close()
	resp, err := c.Call(req)
	if err != nil {
		return resp, fmt.Errorf("pid %d: %w", pid, err)
	}
	return resp, nil
}

func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func runPs(e *env, args []string) error {
	fs := e.flags()
	dir, asJSON := controlFlags(fs)
	verbose := fs.Bool("v", false, "also report sockets that could not be used")
	args, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(args) != 0 {
		return usageErrorf("ps takes no arguments")
	}
	entries, err := control.Scan(*dir)
	if err != nil {
		return fmt.Errorf("control directory %s: %w", *dir, err)
	}
	var infos []control.Info
	for _, en := range entries {
		resp, err := call(*dir, en.PID, &control.Request{Op: control.OpInfo})
		if err != nil {
			if *verbose {
				fmt.Fprintf(e.Stderr, "ncclbpf ps: %v\n", err)
			}
			continue
		}
		if resp.Info != nil {
			infos = append(infos, *resp.Info)
		}
	}
	if *asJSON {
		if infos == nil {
			infos = []control.Info{}
		}
		return writeJSON(e, infos)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tPOLICY\tSHA256\tLOADED\tUPTIME\tATTACHED")
	for _, in := range infos {
		policy, loaded := "-", "-"
		if in.Running {
			policy = in.Policy
			loaded = in.LoadedAt.Local().Format("15:04:05")
		}
		if in.PendingAtSeq != nil {
			policy += fmt.Sprintf(" (switching at seq %d)", *in.PendingAtSeq)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", in.PID, policy, short(in.SHA256), loaded,
			time.Since(in.Started).Round(time.Second), in.Attached)
	}
	return tw.Flush()
}

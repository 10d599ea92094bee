package main

import (
	"os"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/ctl"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "ps [--dir DIR] [--json] [--timeout D] [-v]",
		Summary: "list the processes running libncclbpf.so and their policies",
		Help: `Every process that loads libncclbpf.so serves a control socket named by
its pid in the control directory ($NCCLBPF_CONTROL_DIR, else
$XDG_RUNTIME_DIR/ncclbpf, else /tmp/ncclbpf-UID). ps connects to each and
lists the pid, the policy, its hash, when it was loaded, how long the plugin
has been up and the program attached to each hook. Every process is asked at
once, each for at most --timeout: one that accepts and never answers costs
that, once. Sockets of processes that are gone are skipped (and say so with
-v). A process whose pid is taken in the directory by a process of another
PID namespace is listed by its socket name (PID-nsINODE), which the other
commands accept in place of a pid. Read-only sockets are marked [read-only].`,
		Examples: []string{"ncclbpf ps", "ncclbpf ps --json"},
		Setup: func(fs *pflag.FlagSet) runFunc {
			dir, asJSON := controlFlags(fs)
			verbose := fs.BoolP("verbose", "v", false, "also report sockets that could not be used")
			timeout := fs.Duration("timeout", 5*time.Second, "longest wait (`D`, e.g. 5s) for each process (all are asked at once)")
			return func(e *env, args []string) error { return ctl.PS(e.Streams, args, *dir, *asJSON, *verbose, *timeout) }
		},
	})
}

// controlFlags adds the flags every control command has.
func controlFlags(fs *pflag.FlagSet) (dir *string, asJSON *bool) {
	dir = fs.String("dir", control.DefaultDir(os.Getenv), "control socket `DIR` ($"+control.EnvDir+")")
	asJSON = fs.Bool("json", false, "print JSON")
	return dir, asJSON
}

// completePIDs suggests the processes of the default control directory,
// for the first argument only (later ones: files).
func completePIDs(args []string) []string {
	if len(args) > 0 {
		return nil
	}
	return controlNames()
}

// controlNames lists the socket names (pids) of the default control
// directory: what shell completion offers for a PID.
func controlNames() []string {
	es, err := control.Scan(control.DefaultDir(os.Getenv))
	names := []string{}
	if err != nil {
		return names
	}
	for _, e := range es {
		names = append(names, e.Name)
	}
	return names
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/nccl"
)

func init() {
	register(&command{
		Name:    "reload",
		Args:    "[--dir DIR] [--at-seq N|+K] [--timeout D] [--vars LIST] PID|--all OBJ | --rollback PID|--all",
		Summary: "swap the policy of running processes, atomically, without a restart",
		Help: `reload verifies and compiles OBJ here first (as 'ncclbpf verify' would,
and with the JIT, as the plugin will), then sends it to each target
process, which loads, verifies and compiles it again off NCCL's threads and
publishes it to every hook slot at once. A call in flight finishes on the old
code; the old code is freed after a grace period. A policy that fails at any
stage changes nothing, and the error says why. Maps that the old and the new
object define alike (name, type, sizes, flags) keep their contents.

--at-seq N makes every communicator switch at its call N (tuner calls with
call_seq >= N use the new code), so that all ranks of a job change at the
same collective; give the same N to every process of the job (--all does).
+K means K calls after the largest sequence any target has reached now.
The reload is refused if a communicator already passed N. The switch
completes when every communicator has passed N, or after --timeout.

An activation manifest OBJ.activate next to OBJ (at_seq = N, optionally
comm.<id> = N per communicator; see docs/operators-guide.md) stands for
--at-seq N with an absolute N: give every node the same object and manifest
and every node switches at the same collective. A communicator that already
passed its N refuses the reload (nothing changes there). --no-manifest
ignores the file.

--rollback reloads the object that ran before the last reload.`,
		Examples: []string{
			"ncclbpf reload 4242 policy_v2.bpf.o",
			"ncclbpf reload --all --at-seq +1000 policy_v2.bpf.o  # all ranks here switch at the same collective",
			"ncclbpf reload --rollback 4242",
		},
		Run: runReload,
	})
}

func runReload(e *env, args []string) error {
	fs := e.flags()
	dir, asJSON := controlFlags(fs)
	all := fs.Bool("all", false, "every process in the control directory")
	atSeq := fs.String("at-seq", "", "switch at this per-communicator call sequence (N, or +K from now)")
	timeout := fs.Duration("timeout", 5*time.Minute, "longest wait for every communicator to reach --at-seq")
	vars := fs.String("vars", "", "set volatile const globals: name=value,...")
	rollback := fs.Bool("rollback", false, "reload the object that ran before the last reload")
	noManifest := fs.Bool("no-manifest", false, "ignore OBJ.activate (the activation manifest next to OBJ)")
	args, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	want := 2
	if *all {
		want--
	}
	if *rollback {
		want--
	}
	if len(args) != want {
		return usageErrorf("want PID|--all and OBJ (or --rollback PID|--all), got %d arguments", len(args))
	}
	var pids []int
	if *all {
		es, err := control.Scan(*dir)
		if err != nil {
			return fmt.Errorf("control directory %s: %w", *dir, err)
		}
		for _, en := range es {
			if c, err := control.Dial(en.Path); err == nil {
				c.Close()
				pids = append(pids, en.PID)
			}
		}
		if len(pids) == 0 {
			return fmt.Errorf("no process serves a control socket in %s", *dir)
		}
	} else {
		pid, err := parsePID(args[0])
		if err != nil {
			return err
		}
		pids = []int{pid}
		args = args[1:]
	}
	req := &control.Request{Op: control.OpReload, Vars: *vars, TimeoutMS: timeout.Milliseconds()}
	if *rollback {
		req.Op = control.OpRollback
	} else {
		path := args[0]
		obj, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		opts := bundle.Options{Name: path, RequireNative: true}
		if *vars != "" {
			vs, err := nccl.ParseVars(*vars)
			if err != nil {
				return usageErrorf("--vars: %v", err)
			}
			for _, v := range vs {
				opts.Vars = append(opts.Vars, bundle.Var{Name: v.Name, Value: v.Value})
			}
		}
		b, err := bundle.Load(obj, opts)
		if err != nil {
			return fmt.Errorf("%w (checked here; nothing was sent)", err)
		}
		b.Close()
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		timeoutSet := false
		fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
		if !*noManifest {
			if _, err := applyManifest(e.Stdout, args[0], *atSeq, timeoutSet, req); err != nil {
				return err
			}
		}
		req.Object, req.Name = obj, path
	}
	if *atSeq != "" {
		n, err := resolveSeq(*dir, pids, *atSeq)
		if err != nil {
			return err
		}
		req.AtSeq = &n
	}
	var failed int
	var results []map[string]any
	for _, pid := range pids {
		resp, err := call(*dir, pid, req)
		if err != nil {
			failed++
			fmt.Fprintf(e.Stderr, "ncclbpf reload: %v\n", err)
			continue
		}
		r := resp.Reload
		if *asJSON {
			results = append(results, map[string]any{"pid": pid, "reload": r})
			continue
		}
		fmt.Fprintf(e.Stdout, "pid %d: %s sha256 %s: %s\n", pid, r.Policy, short(r.SHA256), r.Attached)
		kept := "none"
		if len(r.Reused) > 0 {
			kept = strings.Join(r.Reused, ", ")
		}
		fmt.Fprintf(e.Stdout, "  load+verify+compile %s, publish %s, grace period %s; maps kept: %s\n",
			time.Duration(r.LoadNS).Round(time.Microsecond), time.Duration(r.PublishNS), time.Duration(r.GraceNS), kept)
		if r.Pending {
			fmt.Fprintf(e.Stdout, "  armed: communicators switch at call %d\n", r.AtSeq)
		}
	}
	if *asJSON {
		if err := writeJSON(e, results); err != nil {
			return err
		}
	}
	if failed > 0 {
		return errSilentFailure
	}
	return nil
}

// resolveSeq reads --at-seq: N, or +K after the largest sequence the
// targets' communicators have reached.
func resolveSeq(dir string, pids []int, s string) (uint64, error) {
	rel := strings.HasPrefix(s, "+")
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil {
		return 0, usageErrorf("--at-seq %q: want N or +K", s)
	}
	if !rel {
		return n, nil
	}
	var hi uint64
	for _, pid := range pids {
		resp, err := call(dir, pid, &control.Request{Op: control.OpStats})
		if err != nil {
			return 0, err
		}
		if resp.Stats == nil {
			return 0, errors.New("empty stats answer")
		}
		if resp.Stats.Tuner.SeqMax > hi {
			hi = resp.Stats.Tuner.SeqMax
		}
	}
	return hi + n, nil
}

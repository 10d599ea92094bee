package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/ncclbpf/ncclbpf/bundle"
	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/loader"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// File-watch reload: with NCCLBPF_WATCH=1 the configured policy file
// (NCCLBPF_POLICY, a path) is checked every NCCLBPF_WATCH_INTERVAL (default
// 1s). When what the path names has changed — a new inode (a file renamed
// into place, or a symlink swapped, as Kubernetes updates ConfigMap volumes),
// or a new size or modification time — and has stayed the same for one more
// interval (no half-written file is read), and its bytes differ from the
// running object, it is reloaded with the configuration of the first load
// (NCCLBPF_POLICY_CONFIG, NCCLBPF_RULES_FILE). A failing object changes
// nothing; the failure is counted in the stats and printed on stderr once
// per version of the file. A file shorter than its ELF header says (a
// writer that paused longer than an interval) is not loaded: one warning
// says it is incomplete, and it is read again when it changes.
//
// An activation manifest next to the file (NCCLBPF_POLICY + ".activate",
// package config's Manifest; in a ConfigMap, one more key of the same map)
// makes the reload switch at its absolute call sequence instead of when
// this process happens to see the file, so that every node switches at the
// same collective. A communicator that already passed its call refuses the
// reload (one warning; the running policy stays), as does a manifest that
// cannot be read.

// EnvWatch and EnvWatchInterval configure file-watch reload.
const (
	envWatch         = envconfig.Watch
	envWatchInterval = envconfig.WatchInterval
)

type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

func stampOf(path string) (fileStamp, bool) {
	fi, err := os.Stat(path) // follows symlinks: a swapped ..data link shows as a new inode
	if err != nil {
		return fileStamp{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
	}
	return fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
}

// incompleteSize says how much of an incomplete object is there.
func incompleteSize(have int, want int64) string {
	if want > 0 {
		return fmt.Sprintf("%d of the %d bytes its ELF header names", have, want)
	}
	return fmt.Sprintf("%d bytes, not a whole ELF header", have)
}

func init() {
	on, warn := envconfig.ParseSwitch(envWatch, cGetenv(envWatch))
	if warn != "" {
		fmt.Fprintln(os.Stderr, warn)
	}
	if on {
		go watchPolicy()
	}
}

func watchPolicy() {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "ncclbpf: policy watch stopped: internal error: %v\n", r)
		}
	}()
	cfg, err := config.ConfigFromEnv(cGetenv)
	if err != nil || cfg.Policy == "" || cfg.Builtin() != "" {
		fmt.Fprintf(os.Stderr, "ncclbpf: %s=1 needs %s to name a file; not watching\n", envWatch, config.EnvPolicy)
		return
	}
	interval, warn := envconfig.ParseWatchInterval(cGetenv(envWatchInterval))
	if warn != "" {
		fmt.Fprintln(os.Stderr, warn)
	}
	req := reloadRequest{Name: cfg.Policy}
	for _, v := range cfg.Vars {
		req.Vars = append(req.Vars, bundle.Var{Name: v.Name, Value: v.Value})
	}
	last, _ := stampOf(cfg.Policy)
	var seen fileStamp // a changed stamp waiting to settle
	var failed fileStamp
	partial := false // a warning for an incomplete file was given since the last whole one
	for {
		time.Sleep(interval)
		cur, ok := stampOf(cfg.Policy)
		if !ok || cur == last {
			seen = fileStamp{}
			continue
		}
		if cur != seen {
			seen = cur // changed: wait one more interval for it to settle
			continue
		}
		obj, err := config.ReadRegularFile(cfg.Policy, config.MaxPolicyBytes)
		if err == nil {
			if want, inc := loader.Incomplete(obj); inc {
				// caught mid-write (a writer that pauses longer than the
				// interval): say so once, and read it again when it changes
				last = cur
				if !partial {
					fmt.Fprintf(os.Stderr, "ncclbpf: policy watch: %s is incomplete (%s): still being written? It is read again when it changes; the running policy is unchanged\n", cfg.Policy, incompleteSize(len(obj), want))
					partial = true
				}
				continue
			}
			partial = false
			err = checkAllowed(obj)
		}
		if err != nil {
			// Not a policy object we may read (a FIFO, a device, a folder, too
			// big) or not allowed: say so once for this version of the path.
			last = cur
			if cur != failed {
				fmt.Fprintf(os.Stderr, "ncclbpf: policy watch: %v; the running policy is unchanged\n", err)
				failed = cur
			}
			continue
		}
		man, merr := config.ReadManifest(cfg.Policy)
		if now, _ := stampOf(cfg.Policy); now != cur {
			continue // swapped again while being read: read both files of one version
		}
		stateMu.Lock()
		same := bytes.Equal(obj, running.obj)
		stateMu.Unlock()
		last = cur
		if same {
			continue
		}
		r := req
		r.Object = obj
		if spec, err := loader.LoadBytes(obj); err == nil {
			// The rules settings apply as at the first load: a rule table for a
			// policy that has one (the rules file read again), nothing otherwise.
			data, vars, _, err := rulesSettings(spec, cfg)
			if err != nil {
				if cur != failed {
					fmt.Fprintf(os.Stderr, "ncclbpf: policy watch: %v; the running policy is unchanged\n", err)
					failed = cur
				}
				continue
			}
			r.Data, r.Vars = data, append(append([]bundle.Var(nil), req.Vars...), vars...)
		}
		if merr == nil {
			at := man.AtSeq
			r.AtSeq, r.CommAt = &at, man.CommAt
			if d, err := time.ParseDuration(man.Timeout); err == nil && d > 0 {
				r.Timeout = d
			}
		} else if !errors.Is(merr, config.ErrNoManifest) {
			// The object is meant to switch at an agreed call, but when is unknown:
			// switching now could split the job. Keep the running policy.
			if cur != failed {
				fmt.Fprintf(os.Stderr, "ncclbpf: policy watch: %v; not reloading %s (the running policy is unchanged)\n", merr, cfg.Policy)
				failed = cur
			}
			continue
		}
		if _, err := reloadPolicy(r); err != nil {
			if err == errReloadBusy {
				last = fileStamp{} // try again next time
				continue
			}
			if cur != failed {
				fmt.Fprintf(os.Stderr, "ncclbpf: policy watch: %v\n", err)
				failed = cur
			}
		}
	}
}

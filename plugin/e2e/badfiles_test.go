package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/badfiles"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// TestPluginBadFiles: a policy object or rules file that is a FIFO,
// /dev/zero, a directory or a 1 GB file: NCCL's init returns within 100 ms
// (once the Go runtime runs: "goready") with exactly one warning and
// NCCL's defaults. Before, a FIFO blocked
// every init forever with no message and /dev/zero grew memory by ~200 MB/s.
// (Mutation: reading the policy with os.ReadFile again hangs here until
// the context's deadline.)
func TestPluginBadFiles(t *testing.T) {
	artifacts(t)
	dir := t.TempDir()
	script := "goready\ninit 0 100 8 1 1 8 8\ninitus\n" +
		call{comm: 0, coll: 4, nBytes: 1 << 20, pipeOps: 1, table: [21]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}}.String() +
		"\nwarns\nstats\n"
	for kind, path := range badfiles.Make(t, dir) {
		for what, env := range map[string][]string{
			"policy": {envconfig.Policy + "=" + path},
			"rules":  {envconfig.Policy + "=builtin:rules", envconfig.RulesFile + "=" + path},
		} {
			t.Run(what+" "+kind, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, art.host, "run", art.lib, "6")
				cmd.Env = append(cleanEnv(), append(env, envconfig.Control+"=0")...)
				cmd.Stdin = strings.NewReader(script)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if ctx.Err() != nil {
					t.Fatalf("the host hung (killed after 20s): %s", stderr.String())
				}
				if err != nil {
					t.Fatalf("host: %v\n%s\n%s", err, out, stderr.String())
				}
				if w := lineWith(string(out), "warns"); len(w) != 1 || w[0] != "1" {
					t.Errorf("warnings %v, want exactly 1\n%s", w, stderr.String())
				}
				if s := lineWith(string(out), "stats"); len(s) != 6 || s[5] != "-1" {
					t.Errorf("stats %v, want load status -1", s)
				}
				for _, r := range parseResults(t, string(out)) {
					for k, bits := range r.table {
						if bits != fbits(float32(k+1)) {
							t.Fatalf("cell %d changed: NCCL's defaults not kept", k)
						}
					}
				}
				us, _ := strconv.ParseFloat(strings.Join(lineWith(string(out), "initus"), ""), 64)
				if us <= 0 || us > 100000 {
					t.Errorf("the first init took %.1f ms, want under 100 ms", us/1000)
				}
			})
		}
	}
}

// TestPolicyWatchBadFiles: with the file watch on, the policy path is
// swapped (a symlink renamed into place, as Kubernetes does) for each kind
// of bad file in turn: each gives exactly one warning within 100 ms of the
// swap, the running policy stays, and the watch goes on (the next swap is
// seen). Before, a FIFO stopped the watch for good and /dev/zero grew the
// job's memory. (Mutation: the watch reading with os.ReadFile again gives
// no warning for the FIFO and none for anything after it.)
func TestPolicyWatchBadFiles(t *testing.T) {
	bin := reloadHammer(t)
	root := repoRoot(t)
	dir := t.TempDir()
	ctl := filepath.Join(dir, "ctl")
	link := filepath.Join(dir, "policy.bpf.o")
	if err := os.Symlink(filepath.Join(root, "testhost/reload_a.bpf.o"), link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", art.lib, "60")
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), envconfig.Policy+"="+link, envconfig.ControlDir+"="+ctl, envconfig.Watch+"=1",
		envconfig.WatchInterval+"=10ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	pid := cmd.Process.Pid
	var sha string
	for deadline := time.Now().Add(20 * time.Second); sha == ""; time.Sleep(20 * time.Millisecond) {
		if c, err := control.DialPID(ctl, pid); err == nil {
			if r, err := c.Call(&control.InfoQuery{}); err == nil && r.Info.Running {
				sha = r.Info.SHA256
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("the policy did not come up")
		}
	}
	bad := badfiles.Make(t, dir)
	for _, kind := range []string{"FIFO", "/dev/zero", "directory", "1 GB file"} {
		tmp := link + ".new"
		if err := os.Symlink(bad[kind], tmp); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := os.Rename(tmp, link); err != nil {
			t.Fatal(err)
		}
		var got []string
		timeout := time.After(2 * time.Second)
	wait:
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, "policy watch") {
					got = append(got, l)
					if len(got) == 1 {
						if d := time.Since(t0); d > 100*time.Millisecond {
							t.Errorf("%s: warning after %v, want within 100 ms", kind, d)
						}
						timeout = time.After(300 * time.Millisecond) // any second warning?
					}
				}
			case <-timeout:
				break wait
			}
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d warnings %q, want exactly 1", kind, len(got), got)
		}
		c, err := control.DialPID(ctl, pid)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Call(&control.InfoQuery{})
		c.Close()
		if err != nil || r.Info.SHA256 != sha {
			t.Fatalf("%s: the running policy changed or the process stopped answering: %v", kind, err)
		}
		t.Logf("%s: %s", kind, got[0])
	}
}

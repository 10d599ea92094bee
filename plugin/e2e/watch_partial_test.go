package e2e

import (
	"bufio"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

// TestWatchHalfWrittenFile: with the file watch on, the policy file is
// rewritten in place by a slow writer that pauses for many watch
// intervals, empty and then half written. That gives exactly one warning,
// which says the file is incomplete and will be read again; the running
// policy stays; the finished file is loaded when it settles, with no
// further warning. (Before, the half-written file was reported as a
// damaged object, and the empty one once more.)
func TestWatchHalfWrittenFile(t *testing.T) {
	bin := reloadHammer(t)
	root := repoRoot(t)
	dir := t.TempDir()
	ctl := filepath.Join(dir, "ctl")
	path := filepath.Join(dir, "policy.bpf.o")
	a, err := os.ReadFile(filepath.Join(root, "testhost/reload_a.bpf.o"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "testhost/reload_b.bpf.o"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, a, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", art.lib, "60")
	cmd.Env = append(cleanEnv(), envconfig.Policy+"="+path, envconfig.ControlDir+"="+ctl, envconfig.Watch+"=1",
		envconfig.WatchInterval+"=20ms")
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
	attached := func() string {
		c, err := control.DialPID(ctl, cmd.Process.Pid)
		if err != nil {
			return ""
		}
		defer c.Close()
		r, err := c.Call(&control.InfoQuery{})
		if err != nil {
			return ""
		}
		return r.Info.Attached
	}
	waitFor := func(want string, within time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(within); attached() != want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("attached = %q, want %q", attached(), want)
			}
		}
	}
	waitFor("tuner=reload_a", 20*time.Second)

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	collect := func(d time.Duration) {
		for timeout := time.After(d); ; {
			select {
			case l := <-lines:
				if strings.Contains(l, "policy watch") {
					got = append(got, l)
				}
			case <-timeout:
				return
			}
		}
	}
	collect(200 * time.Millisecond) // 10 intervals with the file empty
	if _, err := f.Write(b[:len(b)/2]); err != nil {
		t.Fatal(err)
	}
	collect(300 * time.Millisecond) // 15 more with it half written
	if len(got) != 1 || !strings.Contains(got[0], "incomplete") {
		t.Fatalf("half-written file: warnings %q, want one that says the file is incomplete", got)
	}
	if a := attached(); a != "tuner=reload_a" {
		t.Fatalf("a half-written file replaced the policy: %q", a)
	}
	if _, err := f.Write(b[len(b)/2:]); err != nil {
		t.Fatal(err)
	}
	waitFor("tuner=reload_b", 5*time.Second)
	collect(100 * time.Millisecond)
	if len(got) != 1 {
		t.Fatalf("warnings %q, want the one for the half-written file only", got)
	}
	t.Logf("warning: %s", got[0])
}

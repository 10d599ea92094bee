package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// channelsSwitch checks pid's kept decisions from call lo on: `before`
// channels below n, `after` from n on, with calls kept on both sides.
func channelsSwitch(t *testing.T, dir string, pid int, lo, n uint64, before, after int32) {
	t.Helper()
	resp, err := ctlCall(t, dir, pid, &control.DecisionsQuery{})
	if err != nil || len(resp.Decisions) != 1 {
		t.Fatalf("pid %d: decisions: %v", pid, err)
	}
	var below, from int
	for _, d := range resp.Decisions[0].Recent {
		if d.Seq < lo {
			continue
		}
		want := before
		if d.Seq >= n {
			want, from = after, from+1
		} else {
			below++
		}
		if d.Channels != want {
			t.Fatalf("pid %d: call %d decided %s; want %d channels (switch at %d)", pid, d.Seq, d, want, n)
		}
	}
	if below == 0 || from == 0 {
		t.Fatalf("pid %d: the kept calls do not straddle %d (%d before, %d after)", pid, n, below, from)
	}
}

// maxSeq is the furthest call count of pids.
func maxSeq(dir string, pids []int) uint64 {
	var hi uint64
	for _, pid := range pids {
		if s := seqOf(dir, pid); s > hi {
			hi = s
		}
	}
	return hi
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReloadHonoursActivationManifest: `ncclbpf reload --all OBJ` with
// OBJ.activate next to it switches every rank at the manifest's absolute
// call; a communicator's own line overrides the default; a manifest every
// rank has passed is refused and changes nothing. Mutations caught: the
// manifest ignored (switch at once), the per-communicator line ignored
// (no switch before the far default).
func TestReloadHonoursActivationManifest(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	pids := startRanks(t, 3, dir, []string{envconfig.Policy + "=" + filepath.Join(root, "testhost/reload_a.bpf.o")}, 2000, 90)
	waitSeq(t, dir, pids, 10)
	rel := t.TempDir()
	obj := filepath.Join(rel, "policy.bpf.o")
	copyFile(t, filepath.Join(root, "testhost/reload_b.bpf.o"), obj)
	n := maxSeq(dir, pids) + 400 // 0.8 s: the CLI loads and checks the object first
	os.WriteFile(obj+".activate", []byte(fmt.Sprintf("# rollout\nat_seq = %d\n", n)), 0o644)
	out, code := cli(t, "reload", "--dir", dir, "--all", obj)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("activation manifest %s.activate: every communicator at call %d", obj, n)) ||
		strings.Count(out, fmt.Sprintf("switch at call %d", n)) != 3 {
		t.Fatalf("reload with a manifest: exit %d\n%s", code, out)
	}
	if out, code := cli(t, "reload", "--dir", dir, "--all", "--at-seq", "+10", obj); code != 2 || !strings.Contains(out, "conflicts") {
		t.Fatalf("--at-seq with a manifest: exit %d\n%s", code, out)
	}
	waitSeq(t, dir, pids, n+20)
	for _, pid := range pids {
		channelsSwitch(t, dir, pid, 0, n, 3, 7)
	}

	// Per communicator: 0xc0ffee switches at its own call, long before the default.
	copyFile(t, filepath.Join(root, "testhost/reload_a.bpf.o"), obj)
	n2 := maxSeq(dir, pids) + 400
	os.WriteFile(obj+".activate", []byte(fmt.Sprintf("at_seq = %d\ncomm.0xc0ffee = %d\n", n2+1000000, n2)), 0o644)
	if out, code := cli(t, "reload", "--dir", dir, "--all", obj); code != 0 || !strings.Contains(out, "1 with their own call") {
		t.Fatalf("per-communicator manifest: exit %d\n%s", code, out)
	}
	waitSeq(t, dir, pids, n2+20)
	for _, pid := range pids {
		channelsSwitch(t, dir, pid, n, n2, 7, 3)
	}

	// A manifest in the past: refused everywhere, nothing changes.
	copyFile(t, filepath.Join(root, "testhost/reload_b.bpf.o"), obj)
	os.WriteFile(obj+".activate", []byte("at_seq = 5\n"), 0o644)
	out, code = cli(t, "reload", "--dir", dir, "--all", obj)
	if code != 1 || strings.Count(out, "sequence already passed") != 3 || !strings.Contains(out, "unchanged") {
		t.Fatalf("manifest in the past: exit %d\n%s", code, out)
	}
	for _, pid := range pids {
		resp, _ := ctlCall(t, dir, pid, &control.InfoQuery{})
		if resp.Info.Attached != "tuner=reload_a" {
			t.Fatalf("pid %d: a refused reload changed the policy: %s", pid, resp.Info.Attached)
		}
	}
}

// syncBuffer collects a process's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchHonoursActivationManifest: a ConfigMap-style directory (the
// files behind a ..data symlink swapped atomically) holding the policy and
// its manifest, watched with NCCLBPF_WATCH=1: a new version switches at the
// manifest's call exactly, whenever the process sees it; a version whose
// manifest names a call already passed is refused with one warning and the
// running policy stays. Mutation caught: the watch reloading without the
// manifest (switch when the file is seen, not at N).
func TestWatchHonoursActivationManifest(t *testing.T) {
	host, _ := lockstepTools(t)
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	base := t.TempDir()
	version := 0
	put := func(obj, manifest string) {
		version++
		v := filepath.Join(base, fmt.Sprintf("..v%d", version))
		os.Mkdir(v, 0o755)
		copyFile(t, filepath.Join(root, obj), filepath.Join(v, "policy.bpf.o"))
		if manifest != "" {
			os.WriteFile(filepath.Join(v, "policy.bpf.o.activate"), []byte(manifest), 0o644)
		}
		tmp := filepath.Join(base, "..data_tmp")
		os.Remove(tmp)
		if err := os.Symlink(filepath.Base(v), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(base, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	put("testhost/reload_a.bpf.o", "")
	for _, f := range []string{"policy.bpf.o", "policy.bpf.o.activate"} {
		if err := os.Symlink("..data/"+f, filepath.Join(base, f)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(host, art.lib, "90", "2000", strconv.FormatUint(monotonicNS(t), 10))
	cmd.Env = append(cleanEnv(), envconfig.Policy+"="+filepath.Join(base, "policy.bpf.o"), envconfig.ControlDir+"="+dir,
		envconfig.Watch+"=1", envconfig.WatchInterval+"=50ms")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "serving pid") {
		t.Fatalf("host: %q %v", line, err)
	}
	pid := cmd.Process.Pid
	waitSeq(t, dir, []int{pid}, 10)
	n := seqOf(dir, pid) + 250 // the watch sees the file within ~100 ms (50 calls)
	put("testhost/reload_b.bpf.o", fmt.Sprintf("at_seq = %d\n", n))
	waitSeq(t, dir, []int{pid}, n+20)
	channelsSwitch(t, dir, pid, 0, n, 3, 7)

	put("testhost/reload_a.bpf.o", "at_seq = 3\n")
	time.Sleep(600 * time.Millisecond)
	resp, _ := ctlCall(t, dir, pid, &control.InfoQuery{})
	if resp.Info.Attached != "tuner=reload_b" {
		t.Fatalf("a manifest in the past replaced the policy: %s", resp.Info.Attached)
	}
	if got := strings.Count(stderr.String(), "sequence already passed"); got != 1 {
		t.Fatalf("want one warning for the refused version, got %d:\n%s", got, stderr.String())
	}
}

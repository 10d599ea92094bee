package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

var (
	lockstepOnce sync.Once
	lockstepBin  string
	cliBin       string
	lockstepErr  error
)

// lockstepTools builds testhost/lockstep_host.c and the ncclbpf command
// once per test binary.
func lockstepTools(t *testing.T) (host, cli string) {
	t.Helper()
	artifacts(t)
	lockstepOnce.Do(func() {
		lockstepBin = filepath.Join(art.dir, "lockstep_host")
		cliBin = filepath.Join(art.dir, "ncclbpf")
		lockstepErr = buildSteps(repoRoot(t), []buildrecipe.Step{
			{Target: "lockstep-host", Out: lockstepBin},
			{Target: "cli", Out: cliBin},
		})
	})
	if lockstepErr != nil {
		t.Fatal(lockstepErr)
	}
	return lockstepBin, cliBin
}

// startRanks starts n lockstep hosts (ranks of communicator 0xc0ffee) with
// the control directory dir and env, a call every periodUS, for seconds at
// most, and returns their pids. They are killed when the test ends.
func startRanks(t *testing.T, n int, dir string, env []string, periodUS int, seconds int) []int {
	t.Helper()
	host, _ := lockstepTools(t)
	// The epoch is CLOCK_MONOTONIC 300 ms from now, as the first rank sees it.
	epoch := strconv.FormatUint(monotonicNS(t)+300_000_000, 10)
	var pids []int
	for i := 0; i < n; i++ {
		cmd := exec.Command(host, art.lib, strconv.Itoa(seconds), strconv.Itoa(periodUS), epoch)
		cmd.Env = append(append(cleanEnv(), envconfig.ControlDir+"="+dir, "LOCKSTEP_RANKS="+strconv.Itoa(n)), env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "serving pid ") {
			t.Fatalf("rank %d said %q (%v)", i, line, err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	return pids
}

// seqOf returns the smallest call count of pid's communicators (0 if the
// process does not answer yet).
func seqOf(dir string, pid int) uint64 {
	c, err := control.DialPID(dir, pid)
	if err != nil {
		return 0
	}
	defer c.Close()
	resp, err := c.Call(&control.StatsQuery{})
	if err != nil || resp.Stats == nil || resp.Stats.Tuner.CommsLive == 0 {
		return 0
	}
	return resp.Stats.Tuner.SeqMin
}

// waitSeq waits until every pid's communicators made at least n calls.
func waitSeq(t *testing.T, dir string, pids []int, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ok := true
		for _, pid := range pids {
			if seqOf(dir, pid) < n {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ranks did not reach call %d", n)
		}
	}
}

// cli runs the ncclbpf command and returns its stdout+stderr and exit code.
func cli(t *testing.T, args ...string) (string, int) {
	t.Helper()
	_, bin := lockstepTools(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("ncclbpf %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), 0
}

var armedRe = regexp.MustCompile(`switch at call (\d+)`)

// TestCheckFindsInjectedDivergence: three ranks of one communicator (three
// processes, one control socket each) run the same policy: `ncclbpf check`
// says consistent. One of them alone is reloaded with another policy at
// call N: check exits 1 and names N as the first divergent call, with both
// decisions. Mutations caught: a fold that skips the ring write (nothing to
// compare: not "AGREE"), a compare that skips the chunk or channel
// field, or an off-by-one in the seq of the records (the named call is not N).
// Once every rank switched again at one call, check says AGREE from there.
func TestCheckFindsInjectedDivergence(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	pids := startRanks(t, 3, dir, []string{envconfig.Policy + "=" + filepath.Join(root, "testhost/reload_a.bpf.o")}, 2000, 60)
	waitSeq(t, dir, pids, 20)
	out, code := cli(t, "check", "--dir", dir)
	if code != 0 || !strings.Contains(out, "comm 0xc0ffee: pid ") || !strings.Contains(out, ": AGREE") {
		t.Fatalf("check on identical ranks: exit %d\n%s", code, out)
	}
	out, code = cli(t, "stats", "--dir", dir, strconv.Itoa(pids[0]))
	if code != 0 || !regexp.MustCompile(`comm 0xc0ffee +3 ranks, seq \d+, decision digest [0-9a-f]{16} through seq \d+`).MatchString(out) {
		t.Fatalf("stats shows no digest: exit %d\n%s", code, out)
	}
	// Rank 1 alone switches to policy B at call N.
	out, code = cli(t, "reload", "--dir", dir, "--at-seq", "+200", strconv.Itoa(pids[1]), filepath.Join(root, "testhost/reload_b.bpf.o"))
	m := armedRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("reload: exit %d\n%s", code, out)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	waitSeq(t, dir, pids, n+20)
	out, code = cli(t, "check", "--dir", dir)
	want := fmt.Sprintf("first divergent call: seq %d\n", n)
	if code != 1 || !strings.Contains(out, "DIVERGED") || !strings.Contains(out, want) ||
		!strings.Contains(out, "algorithm 0, protocol 0, 3 channels") || !strings.Contains(out, "algorithm 1, protocol 2, 7 channels") {
		t.Fatalf("check after a lone reload at %d: exit %d, want 1 and %q with both decisions\n%s", n, code, want, out)
	}
	if !strings.Contains(out, fmt.Sprintf("pid %d, pid %d: seq %d:", pids[0], pids[2], n)) ||
		!strings.Contains(out, fmt.Sprintf("\n    pid %d: seq %d:", pids[1], n)) {
		t.Fatalf("the ranks are not grouped by decision:\n%s", out)
	}
	// Recovery: every rank switches to one policy at one call (a new epoch):
	// check compares from there and agrees again; the divergence before is
	// still the first one named until then.
	waitSeq(t, dir, pids, n+300) // the divergent call has left the 256 calls of the shared record
	if out, code := cli(t, "check", "--dir", dir); code != 1 || !strings.Contains(out, want) {
		t.Fatalf("check 300 calls after the divergence: exit %d, want %q\n%s", code, want, out)
	}
	out, code = cli(t, "reload", "--dir", dir, "--all", "--at-seq", "+100", filepath.Join(root, "testhost/reload_a.bpf.o"))
	m = armedRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("reload --all: exit %d\n%s", code, out)
	}
	n2, _ := strconv.ParseUint(m[1], 10, 64)
	waitSeq(t, dir, pids, n2+20)
	out, code = cli(t, "check", "--dir", dir)
	if code != 0 || !strings.Contains(out, "AGREE") || !strings.Contains(out, fmt.Sprintf("from call %d)", n2)) {
		t.Fatalf("check after every rank switched at %d: exit %d\n%s", n2, code, out)
	}
	t.Log(out)
}

// monotonicNS is CLOCK_MONOTONIC now, the clock the lockstep hosts pace
// their calls by.
func monotonicNS(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatalf("CLOCK_MONOTONIC: %v", err)
	}
	return uint64(ts.Nano())
}

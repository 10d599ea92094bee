package e2e

import (
	"bufio"
	"fmt"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

// startRanksOffset is startRanks with rank i started ahead[i] calls ahead
// of the others (its epoch earlier by that many periods).
func startRanksOffset(t *testing.T, dir string, env []string, periodUS int, seconds int, ahead []int) []*exec.Cmd {
	t.Helper()
	host, _ := lockstepTools(t)
	most := 0
	for _, a := range ahead {
		most = max(most, a)
	}
	base := monotonicNS(t) + 300_000_000 + uint64(most)*uint64(periodUS)*1000
	var cmds []*exec.Cmd
	for i, a := range ahead {
		epoch := strconv.FormatUint(base-uint64(a)*uint64(periodUS)*1000, 10)
		cmd := exec.Command(host, art.lib, strconv.Itoa(seconds), strconv.Itoa(periodUS), epoch)
		cmd.Env = append(append(cleanEnv(), envconfig.ControlDir+"="+dir, "LOCKSTEP_RANKS="+strconv.Itoa(len(ahead))), env...)
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
		cmds = append(cmds, cmd)
	}
	return cmds
}

func pidsOf(cmds []*exec.Cmd) []int {
	var out []int
	for _, c := range cmds {
		out = append(out, c.Process.Pid)
	}
	return out
}

// neverSwitched checks that pid decided `ch` channels on every call it kept
// from lo on (at least one call from n on), and has no switch pending.
func neverSwitched(t *testing.T, dir string, pid int, lo, n uint64, ch int32) {
	t.Helper()
	resp, err := ctlCall(t, dir, pid, &control.DecisionsQuery{})
	if err != nil || len(resp.Decisions) != 1 {
		t.Fatalf("pid %d: decisions: %v %+v", pid, err, resp)
	}
	from := 0
	for _, d := range resp.Decisions[0].Recent {
		if d.Seq < lo {
			continue
		}
		if d.Seq >= n {
			from++
		}
		if d.Channels != ch {
			t.Fatalf("pid %d: call %d decided %s; want %d channels on every call (no switch at %d)", pid, d.Seq, d, ch, n)
		}
	}
	if from == 0 {
		t.Fatalf("pid %d: no kept call at or past %d", pid, n)
	}
	st, err := ctlCall(t, dir, pid, &control.InfoQuery{})
	if err != nil || st.Info.PendingAtSeq != nil {
		t.Fatalf("pid %d: still armed after the abort: %v %+v", pid, err, st)
	}
}

func setLocal(t *testing.T, dir string, pids []int, base uint64) {
	t.Helper()
	for r, pid := range pids {
		if _, err := ctlCall(t, dir, pid, &control.MapUpdate{Map: "local", Key: "00000000",
			Value: u64hex(base + uint64(r))}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTwoPhaseAgreeEightRanks: eight processes of one communicator run a
// policy whose channel count is its agreed map's value.
//
//   - One rank is 400 calls ahead of the others; `ncclbpf agree` at an
//     absolute N that the seven others have not reached but it has passed:
//     the command exits 1 naming it, and no rank switches (every kept call
//     from N on, on every rank, still has the old value) — before two-phase,
//     the seven were left armed and switched alone;
//   - the same with `reload --all --at-seq N`;
//   - the happy path: every rank switches at exactly call N, checked call by
//     call on all eight.
//
// Mutations caught: a commit sent before every prepare answered (the seven
// switch), an abort that leaves the trampoline armed (calls from N on take
// the new value), a gate that lets a lapsed process switch.
func TestTwoPhaseAgreeEightRanks(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	const period = 3000
	cmds := startRanksOffset(t, dir, []string{envconfig.Policy + "=" + filepath.Join(root, "testhost/agreed_ch.bpf.o")},
		period, 120, []int{0, 0, 0, 0, 0, 400, 0, 0})
	pids := pidsOf(cmds)
	waitSeq(t, dir, pids, 10)
	setLocal(t, dir, pids, 3) // 3..10: the maximum is 10
	ahead := pids[5]
	n := seqOf(dir, pids[0]) + 150 // the seven reach it in ~0.5 s; the one ahead passed it
	if s := seqOf(dir, ahead); s <= n {
		t.Fatalf("rank 5 is at %d, not past %d", s, n)
	}
	out, code := cli(t, "agree", "--dir", dir, "--from", "local", "--to", "agreed", "--reduce", "max", "--at-seq", fmt.Sprint(n))
	if code != 1 || !strings.Contains(out, "no rank switches") || !strings.Contains(out, fmt.Sprintf("pid %d:", ahead)) ||
		!strings.Contains(out, "1 of 8 ranks did not prepare") {
		t.Fatalf("agree with one rank past %d: exit %d, want 1 naming pid %d\n%s", n, code, ahead, out)
	}
	waitSeq(t, dir, pids, n+30)
	for _, pid := range pids {
		if pid != ahead {
			neverSwitched(t, dir, pid, 0, n, 2)
		}
	}

	// reload --all --at-seq: the same refusal, the same outcome.
	n = seqOf(dir, pids[0]) + 150
	out, code = cli(t, "reload", "--dir", dir, "--all", "--at-seq", fmt.Sprint(n), filepath.Join(root, "testhost/reload_b.bpf.o"))
	if code != 1 || !strings.Contains(out, "no rank switches") || !strings.Contains(out, fmt.Sprintf("pid %d:", ahead)) {
		t.Fatalf("reload --all with one rank past %d: exit %d\n%s", n, code, out)
	}
	waitSeq(t, dir, pids, n+30)
	for _, pid := range pids {
		if pid != ahead {
			neverSwitched(t, dir, pid, 0, n, 2)
		}
	}

	// The happy path: the rank ahead leaves; the seven switch at exactly N.
	cmds[5].Process.Kill()
	cmds[5].Wait()
	seven := append(append([]int{}, pids[:5]...), pids[6:]...)
	args := []string{"agree", "--dir", dir, "--from", "local", "--to", "agreed", "--reduce", "max", "--at-seq", "+150"}
	for _, pid := range seven {
		args = append(args, strconv.Itoa(pid))
	}
	out, code = cli(t, args...)
	m := activeRe.FindAllStringSubmatch(out, -1)
	if code != 0 || len(m) != 7 || !strings.Contains(out, "committed tx-") {
		t.Fatalf("agree on seven ranks: exit %d\n%s", code, out)
	}
	n, _ = strconv.ParseUint(m[0][1], 10, 64)
	waitSeq(t, dir, seven, n+30)
	for _, pid := range seven {
		switchedAt(t, dir, pid, 0, n, 2, 10)
	}
	if out, code := cli(t, "check", "--dir", dir); code != 0 || !strings.Contains(out, "AGREE") {
		t.Fatalf("check after the agreement: exit %d\n%s", code, out)
	}
}

// killingRank kills its process as soon as its prepare has been sent.
type killingRank struct {
	control.SocketRank
	pid int
}

func (k killingRank) Call(req control.Payload, timeout time.Duration) (*control.Response, error) {
	if req.Op() == control.OpPrepare {
		go func() {
			time.Sleep(200 * time.Microsecond)
			syscall.Kill(k.pid, syscall.SIGKILL)
		}()
	}
	return k.SocketRank.Call(req, timeout)
}

// TestTwoPhaseRankKilledMidPrepare: eight ranks; the coordinator's
// prepare reaches all eight and one process is killed while it prepares:
// the round aborts naming it, and none of the seven others switches at N
// (checked call by call), nor stays armed.
func TestTwoPhaseRankKilledMidPrepare(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	cmds := startRanksOffset(t, dir, []string{envconfig.Policy + "=" + filepath.Join(root, "testhost/agreed_ch.bpf.o")},
		3000, 60, make([]int, 8))
	pids := pidsOf(cmds)
	waitSeq(t, dir, pids, 10)
	victim := pids[3]
	var ranks []control.Rank
	for _, pid := range pids {
		r := control.SocketRank{Label: fmt.Sprintf("pid %d", pid), Path: control.SocketPath(dir, pid)}
		if pid == victim {
			ranks = append(ranks, killingRank{r, pid})
		} else {
			ranks = append(ranks, r)
		}
	}
	n := seqOf(dir, pids[0]) + 150
	res := control.TwoPhase(ranks, &control.Prepare{Map: "agreed", Entries: []control.KV{{Key: "00000000", Value: u64hex(9)}}, AtSeq: &n},
		control.SwitchOptions{Timeout: 5 * time.Second})
	if res.Committed || !strings.Contains(res.Reason, fmt.Sprintf("pid %d:", victim)) || len(res.Switched) != 0 {
		t.Fatalf("round with a rank killed mid-prepare: %+v", res)
	}
	cmds[3].Wait()
	survivors := append(append([]int{}, pids[:3]...), pids[4:]...)
	waitSeq(t, dir, survivors, n+30)
	for _, pid := range survivors {
		neverSwitched(t, dir, pid, 0, n, 2)
	}
}

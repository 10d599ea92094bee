package e2e

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/internal/pytorchstore"
	"github.com/ncclbpf/ncclbpf/internal/storetest"
)

// tcpStoreServer starts a real PyTorch TCPStore server (Debian's
// python3-torch) and returns its address; the test skips, with one line,
// only when no Python with PyTorch is installed. Importing PyTorch takes
// seconds: no Python is probed first, one without PyTorch fails at once.
func tcpStoreServer(t *testing.T) string {
	t.Helper()
	addr, stop, err := pytorchstore.LaunchTCPStore(repoRoot(t))
	if errors.Is(err, pytorchstore.ErrNoTorch) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatalf("tcpstore server: %v", err)
	}
	t.Cleanup(stop)
	return addr
}

// TestTwoNodesThroughTCPStore and TestTwoNodesThroughEtcd: a simulated
// two-node job: two ranks whose control sockets are in one directory, two
// in another (neither side sees the other's sockets), all registered in a
// real store (PyTorch's TCPStore; etcd). Through the store alone:
//
//   - agree switches every rank at exactly call N (checked call by call),
//     and check says AGREE over the four;
//   - reload --all --store switches every rank to another policy at
//     exactly its call N;
//   - one rank dies: the next agree aborts naming it, and none of the three
//     others switches; once its registration expired (lease or heartbeat),
//     check and agree name it missing before sending anything.
func TestTwoNodesThroughTCPStore(t *testing.T) {
	twoNodes(t, "tcpstore://"+tcpStoreServer(t))
}

func TestTwoNodesThroughEtcd(t *testing.T) {
	twoNodes(t, "etcd://"+storetest.StartEtcd(t))
}

func twoNodes(t *testing.T, store string) {
	root := repoRoot(t)
	tmp := t.TempDir()
	dirs := []string{filepath.Join(tmp, "node-a"), filepath.Join(tmp, "node-b")}
	var cmds []*exec.Cmd
	var pids []int
	var dirOf []string
	for i := 0; i < 4; i++ {
		d := dirs[i/2]
		c := startRanksOffset(t, d, []string{envconfig.Policy + "=" + filepath.Join(root, "testhost/agreed_ch.bpf.o"),
			envconfig.Store + "=" + store, envconfig.Job + "=twonode", "RANK=" + strconv.Itoa(i), "WORLD_SIZE=4", "LOCKSTEP_RANKS=4"}, 3000, 60, []int{0})
		cmds = append(cmds, c[0])
		pids = append(pids, c[0].Process.Pid)
		dirOf = append(dirOf, d)
	}
	kv, err := control.OpenStore(store, os.Getenv, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, _ := kv.Add("ncclbpf/twonode/ranks/count", 0); n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the four ranks did not register in the store")
		}
	}
	for i, pid := range pids {
		waitSeq(t, dirOf[i], []int{pid}, 10)
		setLocal(t, dirOf[i], []int{pid}, uint64(3+i)) // 3..6: the maximum is 6
	}
	sf := []string{"--store", store, "--job", "twonode"}
	out, code := cli(t, append([]string{"agree", "--from", "local", "--to", "agreed", "--reduce", "max", "--at-seq", "+150"}, sf...)...)
	m := activeRe.FindAllStringSubmatch(out, -1)
	if code != 0 || len(m) != 4 || !strings.Contains(out, "rank 3 (") {
		t.Fatalf("agree through the store: exit %d\n%s", code, out)
	}
	n, _ := strconv.ParseUint(m[0][1], 10, 64)
	for i, pid := range pids {
		waitSeq(t, dirOf[i], []int{pid}, n+30)
		switchedAt(t, dirOf[i], pid, 0, n, 2, 6)
	}
	out, code = cli(t, append([]string{"check"}, sf...)...)
	if code != 0 || !strings.Contains(out, "AGREE") || strings.Count(out, "rank ") != 4 {
		t.Fatalf("check through the store: exit %d\n%s", code, out)
	}

	// reload --all through the store: every rank runs reload_b (7 channels)
	// from exactly its call N.
	out, code = cli(t, append([]string{"reload", "--all", "--at-seq", "+150", filepath.Join(root, "testhost/reload_b.bpf.o")}, sf...)...)
	rm := regexp.MustCompile(`switch at call (\d+)`).FindAllStringSubmatch(out, -1)
	if code != 0 || len(rm) != 4 || !strings.Contains(out, "committed tx-") {
		t.Fatalf("reload --all through the store: exit %d\n%s", code, out)
	}
	n, _ = strconv.ParseUint(rm[0][1], 10, 64)
	for i, pid := range pids {
		waitSeq(t, dirOf[i], []int{pid}, n+30)
		channelsSwitchAt(t, dirOf[i], pid, n-100, n, 6, 7)
	}

	// Rank 2 dies: the round aborts, named; nobody switches.
	cmds[2].Process.Kill()
	cmds[2].Wait()
	killed := time.Now()
	out, code = cli(t, append([]string{"reload", "--all", "--at-seq", "+150", "--rank-timeout", "1s", filepath.Join(root, "testhost/agreed_ch.bpf.o")}, sf...)...)
	if code != 1 || !strings.Contains(out, "rank 2 (") {
		t.Fatalf("reload with a dead rank: exit %d, want 1 naming rank 2\n%s", code, out)
	}
	t.Log(out)
	n2 := seqOf(dirOf[0], pids[0]) + 50
	for i, pid := range pids {
		if i != 2 {
			waitSeq(t, dirOf[i], []int{pid}, n2)
			neverSwitched(t, dirOf[i], pid, n+10, n2-20, 7)
		}
	}
	// Once its registration expired, rank 2 is named missing before
	// anything is sent.
	time.Sleep(time.Until(killed.Add(control.LeaseTTL + 1500*time.Millisecond)))
	out, code = cli(t, append([]string{"check"}, sf...)...)
	if code == 0 || !strings.Contains(out, "rank 2") || !strings.Contains(out, "missing") {
		t.Fatalf("check after rank 2's registration expired: exit %d\n%s", code, out)
	}
}

// channelsSwitchAt checks that pid decided `before` channels on every kept
// call from lo below n and `after` from n on (any algorithm), with calls
// kept on both sides.
func channelsSwitchAt(t *testing.T, dir string, pid int, lo, n uint64, before, after int32) {
	t.Helper()
	resp, err := ctlCall(t, dir, pid, &control.DecisionsQuery{})
	if err != nil || len(resp.Decisions) != 1 {
		t.Fatalf("pid %d: decisions: %v %+v", pid, err, resp)
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

// TestStoreDownOneWarning: the real plugin in a host whose job store is
// down (nothing listens at NCCLBPF_STORE's address; then a TCPStore
// address that refuses, then etcd's) prints exactly one warning however
// often it tries again, and NCCL's calls go on being answered meanwhile.
func TestStoreDownOneWarning(t *testing.T) {
	artifacts(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close() // nothing listens there now
	for _, url := range []string{"tcpstore://" + down, "etcd://" + down} {
		t.Run(strings.SplitN(url, ":", 2)[0], func(t *testing.T) {
			cmd := hostCommand(art.host, "run", art.lib, "5")
			cmd.Env = append(cleanEnv(), control.EnvStore+"="+url, envconfig.ControlDir+"="+t.TempDir())
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			c := call{comm: 0, coll: 4, nBytes: 1 << 20, pipeOps: 1}
			for i := range c.table {
				c.table[i] = float32(1 + i)
			}
			io.WriteString(in, "init 0 1 8 1 1 8 8\n")
			// The agent tries again every 2 s: three tries at least while
			// NCCL's calls keep coming.
			deadline := time.Now().Add(5 * time.Second)
			n := 0
			for ; time.Now().Before(deadline); n++ {
				io.WriteString(in, c.String()+"\n")
				time.Sleep(20 * time.Millisecond)
			}
			io.WriteString(in, "fin 0\n")
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("host: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
			}
			if got := len(parseResults(t, out.String())); got != n {
				t.Errorf("%d of %d calls answered", got, n)
			}
			warns := 0
			for _, line := range strings.Split(errb.String(), "\n") {
				if strings.Contains(line, "job store") {
					warns++
					if !strings.Contains(line, "NCCL runs on") {
						t.Errorf("warning %q does not say that NCCL runs on", line)
					}
				}
			}
			if warns != 1 {
				t.Errorf("%d warnings about the store, want exactly 1; stderr:\n%s", warns, errb.String())
			}
		})
	}
}

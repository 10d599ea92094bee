package e2e

import (
	"bufio"
	"fmt"
	"github.com/ncclbpf/ncclbpf/envconfig"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

// tcpStoreServer starts a real PyTorch TCPStore server (Debian's
// python3-torch) and returns its address; the test skips, with one line,
// only when no Python with PyTorch is installed.
func tcpStoreServer(t *testing.T) string {
	t.Helper()
	var py string
	for _, p := range []string{os.Getenv(envconfig.TestPython), "/usr/bin/python3", "python3"} {
		if p != "" && exec.Command(p, "-c", "import torch.distributed").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 with PyTorch (Debian: apt-get install python3-torch; scripts/setup.sh does)")
	}
	cmd := exec.Command(py, filepath.Join(repoRoot(t), "control", "testdata", "tcpstore_server.py"))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("tcpstore server: %v", err)
	}
	return "127.0.0.1:" + strings.TrimSpace(line)
}

// TestTwoNodesThroughTCPStore: a simulated two-node job: two ranks whose
// control sockets are in one directory, two in another (neither side sees
// the other's sockets), all registered in a real PyTorch TCPStore. agree
// and check through the store alone reach all four: every rank switches at
// exactly call N, and check says AGREE. Then one rank dies: the next agree
// aborts naming it, and none of the three others switches.
func TestTwoNodesThroughTCPStore(t *testing.T) {
	root := repoRoot(t)
	addr := tcpStoreServer(t)
	store := "tcpstore://" + addr
	tmp := t.TempDir()
	dirs := []string{filepath.Join(tmp, "node-a"), filepath.Join(tmp, "node-b")}
	var cmds []*exec.Cmd
	var pids []int
	var dirOf []string
	for i := 0; i < 4; i++ {
		d := dirs[i/2]
		c := startRanksOffset(t, d, []string{envconfig.Policy + "=" + filepath.Join(root, "testhost/agreed_ch.bpf.o"),
			envconfig.Store + "=" + store, envconfig.Job + "=twonode", "RANK=" + strconv.Itoa(i), "LOCKSTEP_RANKS=4"}, 3000, 90, []int{0})
		cmds = append(cmds, c[0])
		pids = append(pids, c[0].Process.Pid)
		dirOf = append(dirOf, d)
	}
	kv, err := control.DialTCPStore(addr, 5*time.Second)
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
	out, code := cli(t, "agree", "--store", store, "--job", "twonode", "--from", "local", "--to", "agreed", "--reduce", "max", "--at-seq", "+150")
	m := activeRe.FindAllStringSubmatch(out, -1)
	if code != 0 || len(m) != 4 || !strings.Contains(out, "rank 3 (") {
		t.Fatalf("agree through the store: exit %d\n%s", code, out)
	}
	n, _ := strconv.ParseUint(m[0][1], 10, 64)
	for i, pid := range pids {
		waitSeq(t, dirOf[i], []int{pid}, n+30)
		switchedAt(t, dirOf[i], pid, 0, n, 2, 6)
	}
	out, code = cli(t, "check", "--store", store, "--job", "twonode")
	if code != 0 || !strings.Contains(out, "AGREE") || strings.Count(out, "rank ") != 4 {
		t.Fatalf("check through the store: exit %d\n%s", code, out)
	}

	// Rank 2 dies: the round aborts, named; nobody switches.
	cmds[2].Process.Kill()
	cmds[2].Wait()
	for i, pid := range pids {
		if i != 2 {
			setLocal(t, dirOf[i], []int{pid}, 20)
		}
	}
	out, code = cli(t, "agree", "--store", store, "--job", "twonode", "--from", "local", "--to", "agreed", "--reduce", "max", "--at-seq", "+150")
	if code != 1 || !strings.Contains(out, "rank 2 (") {
		t.Fatalf("agree with a dead rank: exit %d, want 1 naming rank 2\n%s", code, out)
	}
	t.Log(out)
	n2 := seqOf(dirOf[0], pids[0]) + 50
	for i, pid := range pids {
		if i != 2 {
			waitSeq(t, dirOf[i], []int{pid}, n2)
			neverSwitched(t, dirOf[i], pid, n+10, n2-20, 6)
		}
	}
	_ = fmt.Sprint
}

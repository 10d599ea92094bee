package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
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

// serveProc is a running host (reload_hammer serve: two communicators
// calling getCollInfo) with its control socket.
type serveProc struct {
	pid    int
	dir    string
	mu     sync.Mutex
	stderr []string
}

func (p *serveProc) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.stderr...)
}

// startServe starts a host serving its control socket; wantSocket false
// waits a moment instead and expects none.
func startServe(t *testing.T, wantSocket bool, env ...string) *serveProc {
	t.Helper()
	bin := reloadHammer(t)
	root := repoRoot(t)
	p := &serveProc{dir: filepath.Join(t.TempDir(), "ctl")}
	cmd := exec.Command(bin, "serve", art.lib, "60")
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), append([]string{envconfig.Policy + "=" + filepath.Join(root, "testhost/reload_a.bpf.o"),
		envconfig.ControlDir + "=" + p.dir}, env...)...)
	se, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(se)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			p.mu.Unlock()
		}
	}()
	p.pid = cmd.Process.Pid
	if !wantSocket {
		time.Sleep(1500 * time.Millisecond)
		if es, _ := control.Scan(p.dir); len(es) != 0 {
			t.Fatalf("a control socket exists: %v", es)
		}
		return p
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := p.call(&control.InfoQuery{}); err == nil && r.Info.Running {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("no control socket with a running policy; stderr %q", p.lines())
		}
	}
}

func (p *serveProc) call(req control.Payload) (*control.Response, error) {
	c, err := control.DialPID(p.dir, p.pid)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.Timeout = 30 * time.Second
	return c.Call(req)
}

func readObj(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestControlReadOnlyAndAllowlist: NCCLBPF_CONTROL=ro answers what
// observes and refuses what changes the job; NCCLBPF_RELOAD_ALLOW lets only
// the listed digests be reloaded. (Mutation: dropping the writable check
// in handleControl lets the read-only reload through.)
func TestControlReadOnlyAndAllowlist(t *testing.T) {
	objB := readObj(t, "testhost/reload_b.bpf.o")
	ro := startServe(t, true, envconfig.Control+"=ro")
	r, err := ro.call(&control.InfoQuery{})
	if err != nil || r.Info.Control != "read-only" {
		t.Fatalf("info: %+v %v", r, err)
	}
	for _, req := range []control.Payload{&control.StatsQuery{}, &control.MapList{}} {
		if _, err := ro.call(req); err != nil {
			t.Errorf("%s on a read-only socket: %v", req.Op(), err)
		}
	}
	if _, err := ro.call(&control.MapDump{Map: "hits"}); err != nil {
		t.Errorf("map dump on a read-only socket: %v", err)
	}
	for _, req := range []control.Payload{
		&control.Reload{Object: objB, Name: "B"},
		&control.Rollback{},
		&control.Cancel{},
		&control.MapUpdate{Map: "hits", Key: "00000000", Value: "0100000000000000"},
	} {
		if _, err := ro.call(req); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s on a read-only socket: %v, want refused as read-only", req.Op(), err)
		}
	}

	sum := sha256.Sum256(objB)
	allow := startServe(t, true, envconfig.ReloadAllow+"="+hex.EncodeToString(sum[:]))
	objA := readObj(t, "testhost/reload_a.bpf.o")
	if _, err := allow.call(&control.Reload{Object: objA, Name: "A"}); err == nil ||
		!strings.Contains(err.Error(), "not in NCCLBPF_RELOAD_ALLOW") {
		t.Errorf("reload of an unlisted object: %v", err)
	}
	if _, err := allow.call(&control.Reload{Object: objB, Name: "B"}); err != nil {
		t.Errorf("reload of the listed object: %v", err)
	}
	broken := startServe(t, true, envconfig.ReloadAllow+"=nothex")
	if _, err := broken.call(&control.Reload{Object: objB, Name: "B"}); err == nil ||
		!strings.Contains(err.Error(), "not a SHA-256 digest") {
		t.Errorf("reload with a broken allowlist: %v", err)
	}
}

// TestControlSwitchValues: every spelling of off turns the socket off, a
// value the plugin does not know warns and serves read-only, and a bad
// watch interval warns. (Before, only "0" turned it off and the others,
// like a bad interval, were ignored silently.)
func TestControlSwitchValues(t *testing.T) {
	for _, v := range []string{"off", "false", "no", "0"} {
		startServe(t, false, envconfig.Control+"="+v)
	}
	p := startServe(t, true, envconfig.Control+"=maybe", envconfig.Watch+"=1", envconfig.WatchInterval+"=soon")
	r, err := p.call(&control.InfoQuery{})
	if err != nil || r.Info.Control != "read-only" {
		t.Fatalf("info: %+v %v", r, err)
	}
	time.Sleep(200 * time.Millisecond)
	all := strings.Join(p.lines(), "\n")
	for _, want := range []string{`NCCLBPF_CONTROL="maybe"`, `NCCLBPF_WATCH_INTERVAL="soon"`} {
		if strings.Count(all, want) != 1 {
			t.Errorf("stderr %q: want one warning about %s", all, want)
		}
	}
}

// TestControlAtSeqBoundsAndCancel: an activation sequence too far ahead
// or a timeout over the limit is refused; an armed reload (which holds off
// every other reload until it activates) can be cancelled, and the old
// policy runs on. An array index out of range says so. (Before,
// --at-seq +10^14 --timeout 876000h wedged reload, rollback and sampling
// with no way out.)
func TestControlAtSeqBoundsAndCancel(t *testing.T) {
	p := startServe(t, true)
	objB := readObj(t, "testhost/reload_b.bpf.o")
	info, _ := p.call(&control.InfoQuery{})
	far := uint64(1e14)
	if _, err := p.call(&control.Reload{Object: objB, Name: "B", AtSeq: &far}); err == nil ||
		!strings.Contains(err.Error(), "ahead of the furthest communicator") {
		t.Fatalf("at-seq 1e14: %v", err)
	}
	if _, err := p.call(&control.Reload{Object: objB, Name: "B", TimeoutMS: 876000 * 3600 * 1000}); err == nil ||
		!strings.Contains(err.Error(), "timeout_ms must be within") {
		t.Fatalf("timeout 876000h: %v", err)
	}
	// Armed far ahead (a call every 200 us: never reached in this test).
	st, _ := p.call(&control.StatsQuery{})
	at := st.Stats.Tuner.SeqMax + 100_000_000
	r, err := p.call(&control.Reload{Object: objB, Name: "B", AtSeq: &at, TimeoutMS: 3_600_000})
	if err != nil || !r.Reload.Pending {
		t.Fatalf("armed reload: %+v %v", r, err)
	}
	if _, err := p.call(&control.Reload{Object: objB, Name: "B"}); err == nil ||
		!strings.Contains(err.Error(), "in progress") {
		t.Fatalf("a reload while one is armed: %v", err)
	}
	t0 := time.Now()
	r, err = p.call(&control.Cancel{})
	if err != nil || r.Reload.SHA256 != info.Info.SHA256 {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("cancel took %v", d)
	}
	now, _ := p.call(&control.InfoQuery{})
	if now.Info.PendingAtSeq != nil || now.Info.SHA256 != info.Info.SHA256 || now.Info.Attached != "tuner=reload_a" {
		t.Fatalf("after cancel: %+v", now.Info)
	}
	if _, err := p.call(&control.Cancel{}); err == nil || !strings.Contains(err.Error(), "no armed reload") {
		t.Errorf("second cancel: %v", err)
	}
	// Reloads work again at once, and the old policy's map is still there.
	if _, err := p.call(&control.Reload{Object: objB, Name: "B"}); err != nil {
		t.Fatalf("reload after cancel: %v", err)
	}
	if _, err := p.call(&control.MapUpdate{Map: "hits", Key: "05000000", Value: "0100000000000000"}); err == nil ||
		!strings.Contains(err.Error(), "index 5 out of range: array map hits has") {
		t.Errorf("array index out of range: %v", err)
	}
	// Words as typed, read with the map's types in the process.
	for _, tc := range []struct {
		args []string
		want string // the entry written (hex) or a part of the error
	}{
		{[]string{"1", "10000000"}, "01000000=8096980000000000"},
		{[]string{"key", "hex", "01", "00", "00", "00", "value", "1152921504606846977"}, "01000000=0100000000000010"},
		{[]string{"5", "1"}, "index 5 out of range: array map hits has"},
		{[]string{"1", "-1"}, "value -1 does not fit the 8-byte value"},
		{[]string{"key", "1"}, "update needs a value"},
	} {
		r, err := p.call(&control.MapUpdate{Map: "hits", Args: tc.args})
		got := fmt.Sprint(err)
		if err == nil && len(r.Entries) == 1 {
			got = r.Entries[0].Key + "=" + r.Entries[0].Value
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("update %q: %s, want %s", tc.args, got, tc.want)
		}
	}
	// Lookup decodes the one entry, exactly; an array entry cannot be deleted.
	r, err = p.call(&control.MapLookup{Map: "hits", Args: []string{"key", "hex", "01", "00", "00", "00"}})
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	// hits[1] counts calls on from 2^60+1: an exact integer just above it.
	if m := regexp.MustCompile(`"entries":\[\{"key":1,"value":(\d+)\}\]`).FindStringSubmatch(string(r.Dump)); m == nil {
		t.Errorf("lookup: %s", r.Dump)
	} else if v, err := strconv.ParseUint(m[1], 10, 64); err != nil || v < 1<<60+1 || v > 1<<60+1e9 {
		t.Errorf("lookup: hits[1] = %s", m[1])
	}
	if _, err := p.call(&control.MapDelete{Map: "hits", Args: []string{"1"}}); err == nil ||
		!strings.Contains(err.Error(), "array entries always exist") {
		t.Errorf("delete from an array: %v", err)
	}
}

// TestReloadAllExpectEndToEnd: the CLI against three running hosts in one
// directory: --expect 4 sends nothing, --expect 3 arms all three at the
// same sequence, --cancel withdraws all three.
func TestReloadAllExpectEndToEnd(t *testing.T) {
	bin := reloadHammer(t)
	root := repoRoot(t)
	cli := filepath.Join(art.dir, "ncclbpf")
	if err := buildrecipe.Build(root, nil, buildrecipe.Step{Target: "cli", Out: cli}); err != nil {
		t.Fatalf("building the CLI: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "ctl")
	for i := 0; i < 3; i++ {
		cmd := exec.Command(bin, "serve", art.lib, "60")
		cmd.Dir = root
		cmd.Env = append(cleanEnv(), envconfig.Policy+"="+filepath.Join(root, "testhost/reload_a.bpf.o"), envconfig.ControlDir+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got, _ := reachable(dir); len(got) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("three sockets did not come up")
		}
	}
	run := func(args ...string) (string, error) {
		out, err := exec.Command(cli, append([]string{"reload", "--dir", dir, "--all"}, args...)...).CombinedOutput()
		return string(out), err
	}
	objB := filepath.Join(root, "testhost/reload_b.bpf.o")
	if out, err := run("--expect", "4", objB); err == nil || !strings.Contains(out, "3 processes answered") {
		t.Fatalf("--expect 4: %v %s", err, out)
	}
	out, err := run("--expect", "3", "--at-seq", "+100000", objB) // 20 s ahead at a call every 200 us
	if err != nil || strings.Count(out, "armed: communicators switch at call") != 3 {
		t.Fatalf("--expect 3: %v %s", err, out)
	}
	_, rs := reachable(dir)
	var ats []string
	for _, r := range rs {
		if r.Resp != nil && r.Resp.Info != nil && r.Resp.Info.PendingAtSeq != nil {
			ats = append(ats, strconv.FormatUint(*r.Resp.Info.PendingAtSeq, 10))
		}
	}
	if len(ats) != 3 || ats[0] != ats[1] || ats[1] != ats[2] {
		t.Fatalf("pending sequences %v, want the same on all three", ats)
	}
	if out, err := run("--cancel"); err != nil || strings.Count(out, "armed reload withdrawn") != 3 {
		t.Fatalf("--cancel: %v %s", err, out)
	}
}

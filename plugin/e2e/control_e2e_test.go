package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/maps"
)

// TestControlSocketEndToEnd drives a running host process (the hammer's
// serve mode: two communicators calling getCollInfo) through its control
// socket: info, stats, map dump/update, a reload that keeps a map, a reload
// the plugin refuses (nothing changes), an at-seq reload, rollback.
func TestControlSocketEndToEnd(t *testing.T) {
	bin := reloadHammer(t)
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	cmd := exec.Command(bin, "serve", art.lib, "60")
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), envconfig.Policy+"="+filepath.Join(root, "testhost/reload_a.bpf.o"), envconfig.ControlDir+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("host: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "serving pid ")))
	if err != nil || pid != cmd.Process.Pid {
		t.Fatalf("host said %q", line)
	}
	var cl *control.Client
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if cl, err = control.DialPID(dir, pid); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no control socket: %v", err)
		}
	}
	defer cl.Close()
	mustCall := func(req control.Payload) *control.Response {
		t.Helper()
		resp, err := cl.Call(req)
		if err != nil {
			t.Fatalf("%s: %v", req.Op(), err)
		}
		return resp
	}
	fi, err := os.Stat(control.SocketPath(dir, pid))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi, err)
	}

	// The socket comes up when the library is loaded, the policy with the first init.
	info := mustCall(&control.InfoQuery{}).Info
	for deadline := time.Now().Add(10 * time.Second); !info.Running && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		info = mustCall(&control.InfoQuery{}).Info
	}
	if !info.Running || !strings.HasSuffix(info.Policy, "reload_a.bpf.o") || info.Attached != "tuner=reload_a" || len(info.SHA256) != 64 {
		t.Fatalf("info: %+v", info)
	}
	hits := func() (a, b uint64) {
		t.Helper()
		d, err := maps.DecodeDump(mustCall(&control.MapDump{Map: "hits"}).Dump)
		if err != nil {
			t.Fatal(err)
		}
		v := func(i int) uint64 {
			n, _ := d.Entries[i].Value.(json.Number)
			u, err := strconv.ParseUint(n.String(), 10, 64)
			if err != nil {
				t.Fatalf("hits[%d] = %v: %v", i, d.Entries[i].Value, err)
			}
			return u
		}
		return v(0), v(1)
	}
	time.Sleep(50 * time.Millisecond)
	if a, _ := hits(); a == 0 {
		t.Fatal("policy A did not count its calls in hits")
	}
	// map update: hits[0] = 1<<40, then it keeps counting from there.
	mustCall(&control.MapUpdate{Map: "hits", Key: "00000000", Value: "0000000000010000"})
	if a, _ := hits(); a < 1<<40 {
		t.Fatalf("map update did not land: hits[0] = %d", a)
	}
	// Words typed as a user would, and a dump exact past 2^53: the count
	// goes on from 2^60+1 exactly (odd: a float would have made it even).
	upd := mustCall(&control.MapUpdate{Map: "hits", Args: []string{"0", "1152921504606846977"}})
	if d, err := maps.DecodeDump(upd.Dump); err != nil || len(d.Entries) != 1 ||
		maps.FormatValue(d.Entries[0].Key) != "0" || maps.FormatValue(d.Entries[0].Value) != "1152921504606846977" {
		t.Fatalf("map update answers the entry as written, decoded: %v %+v", err, d)
	}
	if a, _ := hits(); a < 1<<60+1 || a > 1<<60+1e9 {
		t.Fatalf("map update of 2^60+1: hits[0] = %d", a)
	}
	objB, _ := os.ReadFile(filepath.Join(root, "testhost/reload_b.bpf.o"))
	r := mustCall(&control.Reload{Object: objB, Name: "B"}).Reload
	if r.Attached != "tuner=reload_b" || len(r.Reused) != 1 || r.Reused[0] != "hits" {
		t.Fatalf("reload B: %+v", r)
	}
	time.Sleep(50 * time.Millisecond)
	if a, b := hits(); a < 1<<40 || b == 0 {
		t.Fatalf("after reload: hits = %d, %d; want A's count kept and B counting", a, b)
	}
	// A bad object: refused by the plugin's own verifier; B keeps running.
	bad, _ := os.ReadFile(filepath.Join(root, "plugin/e2e/testdata/unsafe_oob.bpf.o"))
	_, err = cl.Call(&control.Reload{Object: bad, Name: "bad"})
	if err == nil || !strings.Contains(err.Error(), "rejected") || !strings.Contains(err.Error(), "unchanged") {
		t.Fatalf("bad reload: %v", err)
	}
	if _, err = cl.Call(&control.Reload{Object: []byte("not an ELF"), Name: "junk"}); err == nil {
		t.Fatal("junk reload accepted")
	}
	if info := mustCall(&control.InfoQuery{}).Info; info.Attached != "tuner=reload_b" {
		t.Fatalf("a failed reload changed the policy: %+v", info)
	}
	// at-seq in the past: refused.
	past := uint64(0)
	if _, err = cl.Call(&control.Reload{Object: objB, Name: "B", AtSeq: &past}); err == nil ||
		!strings.Contains(err.Error(), "already") {
		t.Fatalf("at-seq 0 on a running job: %v", err)
	}
	st := mustCall(&control.StatsQuery{}).Stats
	if st.Tuner.CommsLive != 2 || st.Tuner.PolicyCalls == 0 || st.Reload.Reloads != 1 || st.Reload.Failures != 3 ||
		st.Reload.LiveBundles != 1 {
		t.Fatalf("stats: %+v", st)
	}
	// at-seq in the future: armed, then active once both communicators pass it.
	objA, _ := os.ReadFile(filepath.Join(root, "testhost/reload_a.bpf.o"))
	at := st.Tuner.SeqMax + 500
	r = mustCall(&control.Reload{Object: objA, Name: "A", AtSeq: &at}).Reload
	if !r.Pending || r.AtSeq != at {
		t.Fatalf("at-seq reload: %+v", r)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		in := mustCall(&control.InfoQuery{}).Info
		if in.PendingAtSeq == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("at-seq activation never completed")
		}
	}
	st = mustCall(&control.StatsQuery{}).Stats
	if st.Tuner.SeqMin <= at || st.Reload.ForcedActivations != 0 || st.Reload.LiveBundles != 1 {
		t.Fatalf("after activation: %+v", st)
	}
	// Cost sampling: the tuner program is timed for a window, then put back.
	st = mustCall(&control.StatsQuery{SampleMS: 300}).Stats
	if len(st.Cost) != 1 || st.Cost[0].Hook != "tuner" || st.Cost[0].Samples == 0 || st.Cost[0].MeanNS <= 0 ||
		st.Cost[0].MaxNS < st.Cost[0].MeanNS {
		t.Fatalf("cost: %+v", st.Cost)
	}
	if info := mustCall(&control.InfoQuery{}).Info; info.Attached != "tuner=reload_a" {
		t.Fatalf("after sampling: %+v", info)
	}
	// rollback goes back to B.
	r = mustCall(&control.Rollback{}).Reload
	if r.Attached != "tuner=reload_b" {
		t.Fatalf("rollback: %+v", r)
	}
	// A failing reload says each name once.
	_, err = cl.Call(&control.Reload{Object: bad})
	if err == nil || strings.Count(err.Error(), "reloaded policy") != 1 {
		t.Fatalf("bad reload without a name: %v", err)
	}
	// .rodata is read-only: an update is refused without a hint at --force,
	// which could not help.
	objS, _ := os.ReadFile(filepath.Join(root, "policies/size_aware.bpf.o"))
	mustCall(&control.Reload{Object: objS, Name: "S"})
	for _, force := range []bool{false, true} {
		_, err = cl.Call(&control.MapUpdate{Map: ".rodata", Args: []string{"0", "size_lo=1"}, Force: force})
		if err == nil || !strings.Contains(err.Error(), "read-only") || strings.Contains(err.Error(), "--force") ||
			!strings.Contains(err.Error(), "--var") {
			t.Fatalf("update of .rodata (force %v): %v", force, err)
		}
	}
	// Another uid's view: covered in package control; a dead process's socket:
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := control.DialPID(dir, pid); !errors.Is(err, control.ErrStale) && !errors.Is(err, control.ErrNoProcess) {
		t.Fatalf("dial after the process died: %v", err)
	}
}

// TestWatchReload: NCCLBPF_WATCH=1 reloads the policy file when a new one
// is put in place the way Kubernetes updates a ConfigMap volume (the file
// is a symlink through "..data", and ..data is swapped by rename); an
// unverifiable file changes nothing.
func TestWatchReload(t *testing.T) {
	bin := reloadHammer(t)
	root := repoRoot(t)
	base := t.TempDir()
	dir := filepath.Join(base, "ctl")
	put := func(src, version string) {
		t.Helper()
		vdir := filepath.Join(base, version)
		if err := os.Mkdir(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(root, src))
		if err := os.WriteFile(filepath.Join(vdir, "policy.bpf.o"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(base, "..data_tmp")
		os.Remove(tmp)
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(base, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	put("testhost/reload_a.bpf.o", "v1")
	if err := os.Symlink("..data/policy.bpf.o", filepath.Join(base, "policy.bpf.o")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", art.lib, "60")
	cmd.Env = append(cleanEnv(), envconfig.Policy+"="+filepath.Join(base, "policy.bpf.o"), envconfig.ControlDir+"="+dir,
		envconfig.Watch+"=1", envconfig.WatchInterval+"=50ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	attached := func() string {
		cl, err := control.DialPID(dir, cmd.Process.Pid)
		if err != nil {
			return ""
		}
		defer cl.Close()
		resp, err := cl.Call(&control.InfoQuery{})
		if err != nil {
			return ""
		}
		return resp.Info.Attached
	}
	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); attached() != want; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("attached = %q, want %q", attached(), want)
			}
		}
	}
	waitFor("tuner=reload_a")
	put("testhost/reload_b.bpf.o", "v2")
	waitFor("tuner=reload_b")
	put("plugin/e2e/testdata/unsafe_oob.bpf.o", "v3")
	time.Sleep(500 * time.Millisecond)
	if got := attached(); got != "tuner=reload_b" {
		t.Fatalf("an unverifiable file replaced the policy: %q", got)
	}
	put("testhost/reload_a.bpf.o", "v4")
	waitFor("tuner=reload_a")
}

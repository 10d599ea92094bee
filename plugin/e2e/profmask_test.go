package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// TestProfilerMaskFollowsReload: NCCL reads the activation mask through the
// address it gave the profiler's init at each collective or p2p call, so a
// reload must store the new bundle's mask there. The host (profiler_host
// maskreload) sends p2p tasks under the mask as it finds it at each call;
// reloads go p2p counter (P2p only) -> kernel_ch_end program (P2p and
// KernelCh: its channels reach it, with their tasks) -> p2p counter again.
func TestProfilerMaskFollowsReload(t *testing.T) {
	profArtifacts(t)
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ctl")
	cmd := hostCommand(profArt.host, "maskreload", profArt.lib)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), envconfig.Policy+"="+filepath.Join(root, "testhost/gpu/p2p_count.bpf.o"),
		envconfig.ControlDir+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedBuf{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	masks := make(chan int, 16)
	pid := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 {
				continue
			}
			n, err := strconv.ParseInt(f[1], 0, 32)
			if err != nil {
				continue
			}
			switch f[0] {
			case "mask":
				masks <- int(n)
			case "ready":
				pid <- int(n)
			}
		}
		close(masks)
	}()
	want := func(m int) {
		t.Helper()
		select {
		case got, ok := <-masks:
			if !ok || got != m {
				t.Fatalf("NCCL's activation mask %#x (host gone: %v), want %#x", got, !ok, m)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("NCCL's activation mask never became %#x", m)
		}
	}
	want(0x4)
	var p int
	select {
	case p = <-pid:
	case <-time.After(20 * time.Second):
		t.Fatal("the host never got ready")
	}
	cl := dialControl(t, dir, p)
	defer cl.Close()
	call := func(r control.Payload) *control.Response {
		t.Helper()
		resp, err := cl.Call(r)
		if err != nil {
			t.Fatalf("%s: %v", r.Op(), err)
		}
		return resp
	}
	reload := func(obj string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, obj))
		if err != nil {
			t.Fatal(err)
		}
		call(&control.Reload{Object: b, Name: obj})
	}
	kch := func() uint64 {
		return call(&control.StatsQuery{}).Stats.Profiler.Calls["profiler/kernel_ch_end"]
	}
	reload("testhost/prof_kch.bpf.o")
	want(0x44)
	for deadline := time.Now().Add(20 * time.Second); kch() < 20; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("kernel_ch_end ran %d times after the reload that asked for channels", kch())
		}
	}
	if st := call(&control.StatsQuery{}).Stats.Profiler; st.Orphans != 0 || st.Mask != 0x44 {
		t.Errorf("after the reload: %d channels without their task, mask stored %#x", st.Orphans, st.Mask)
	}
	reload("testhost/gpu/p2p_count.bpf.o")
	want(0x4)
	stdin.Close()
}

// dialControl dials the control socket of process pid in dir, waiting up to
// 20 s for it: the library starts its control server on a goroutine of its
// own, which a loaded machine may run after the host's first output.
func dialControl(t *testing.T, dir string, pid int) *control.Client {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cl, err := control.DialPID(dir, pid)
		if err == nil {
			return cl
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

// TestProfilerThreadExit: a thread keeps a few freed events for its next
// allocations; threads that exit keep theirs for good, so only a few threads
// per context may keep any. After 200 threads each completed 8 events of one
// context and exited, 470 live tasks must all fit its pool of 512.
func TestProfilerThreadExit(t *testing.T) {
	profArtifacts(t)
	for _, lib := range []string{profArt.standalone, profArt.lib} {
		out, _ := profHost(t, []string{envconfig.Policy + "=none"}, 0, "threadexit", lib)
		if !strings.Contains(out, "470 of 470 live tasks") {
			t.Errorf("%s:\n%s", filepath.Base(lib), out)
		}
	}
}

// TestProfilerSoloTasks: a task that no child may reference is released by
// its stop with a plain store. Started on one thread and stopped on another
// (then stopped again), 4000 such tasks complete exactly once and leave the
// pool whole; a proxy operation that starts under one after a reload
// published a proxy_op_end program is an orphan, and both complete once.
func TestProfilerSoloTasks(t *testing.T) {
	profArtifacts(t)
	for _, lib := range []string{profArt.standalone, profArt.lib} {
		out, _ := profHost(t, []string{envconfig.Policy + "=none"}, 0, "solo", lib)
		if !strings.Contains(out, "solo: 4000 tasks completed once across threads, 470 live after") {
			t.Errorf("%s:\n%s", filepath.Base(lib), out)
		}
	}
}

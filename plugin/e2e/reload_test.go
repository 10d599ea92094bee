package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// Hot reload through the NCCL-like C host (testhost/reload_hammer.c): tuner
// calls and profiler events (ncclProfiler_v5 P2p pairs) on 8 threads while
// the policy is reloaded, alternating reload_pa, reload_pb (tuner and
// profiler/p2p_end programs) and an unverifiable object. The
// default sizes keep the run short on a 2-core CI machine; the long run is
//
//	NCCLBPF_HAMMER_CALLS=10000000 NCCLBPF_HAMMER_RELOADS=10000 go test ./plugin/e2e -run ReloadHammer -v -timeout 1h
//
// and of swaps of prebuilt bundles (TestReloadSwapHammer)
//
//	NCCLBPF_HAMMER_SWAPS=1000000 go test ./plugin/e2e -run ReloadSwapHammer -v -timeout 2h

var (
	hammerOnce sync.Once
	hammerErr  error
	hammerBin  string
)

func reloadHammer(t *testing.T) string {
	t.Helper()
	artifacts(t)
	hammerOnce.Do(func() {
		hammerBin = filepath.Join(art.dir, "reload_hammer")
		hammerErr = buildSteps(repoRoot(t), []buildrecipe.Step{{Target: "reload-hammer", Out: hammerBin}})
	})
	if hammerErr != nil {
		t.Fatal(hammerErr)
	}
	return hammerBin
}

// runHammer runs the reload hammer host and returns its "key value" lines.
func runHammer(t *testing.T, env []string, args ...string) map[string]string {
	t.Helper()
	cmd := hostCommand(reloadHammer(t), args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), env...)
	for _, k := range []string{envconfig.HammerCalls, envconfig.HammerReloads, envconfig.HammerThreads, envconfig.HammerProfEvery, envconfig.SyncRanks, envconfig.HammerSwaps} {
		if v := os.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("%s %s:\n%s", filepath.Base(cmd.Path), args[0], out)
	if err != nil {
		t.Fatalf("reload_hammer %s: %v\n%s", args[0], err, stderr.String())
	}
	kv := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			kv[k] = v
		}
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("no PASS:\n%s\n%s", out, stderr.String())
	}
	return kv
}

func TestReloadHammer(t *testing.T) {
	reloadHammer(t) // builds art.lib
	a, b, bad := "testhost/reload_pa.bpf.o", "testhost/reload_pb.bpf.o", "plugin/e2e/testdata/unsafe_oob.bpf.o"
	env := []string{envconfig.Control + "=0", envconfig.Policy + "=" + a}
	if os.Getenv(envconfig.HammerCalls) == "" {
		env = append(env, envconfig.HammerCalls+"=20000", envconfig.HammerReloads+"=30", envconfig.HammerThreads+"=8")
	}
	kv := runHammer(t, env, "hammer", art.lib, a, b, bad)
	// The host checks the invariants itself; make sure it saw both policies
	// and failing reloads, so that the checks had something to check.
	for _, k := range []string{"decisions_a", "decisions_b", "reloads_ok", "reloads_failed", "prof_events", "pev_a", "pev_b"} {
		if kv[k] == "" || kv[k] == "0" {
			t.Errorf("%s = %q: the hammer did not exercise it", k, kv[k])
		}
	}
	if kv["bad_decisions"] != "0" {
		t.Errorf("bad decisions: %s", kv["bad_decisions"])
	}
	if kv["decisions_none"] != "0" {
		t.Errorf("%s calls ran no policy: the tuner slot was empty during a reload", kv["decisions_none"])
	}
	// The host checked pev_a + pev_b == prof_events == p2p_end calls; check it here too.
	var ev, pa, pb uint64
	fmt.Sscan(kv["prof_events"], &ev)
	fmt.Sscan(kv["pev_a"], &pa)
	fmt.Sscan(kv["pev_b"], &pb)
	if pa+pb != ev || kv["prof_p2p_end_calls"] != kv["prof_events"] || kv["prof_forced"] != "0" ||
		kv["prof_dropped"] != kv["prof_events_refused"] {
		t.Errorf("profiler events %d, counted A %d + B %d, p2p_end calls %s, dropped %s (host saw %s refused), forced %s",
			ev, pa, pb, kv["prof_p2p_end_calls"], kv["prof_dropped"], kv["prof_events_refused"], kv["prof_forced"])
	}
}

func TestReloadAtSeqSwitchesAllRanksTogether(t *testing.T) {
	reloadHammer(t)
	env := []string{envconfig.Control + "=0", envconfig.Policy + "=testhost/reload_a.bpf.o"}
	kv := runHammer(t, env, "sync", art.lib, "testhost/reload_b.bpf.o")
	if kv["pending_after_arm"] != "1" {
		t.Errorf("pending_after_arm = %s: the slow ranks had not reached the sequence, the switch must wait for them", kv["pending_after_arm"])
	}
}

// TestReloadHammerSanitized runs a short hammer with the host built with
// AddressSanitizer, UBSan and LeakSanitizer (the Go library itself is not
// instrumented; its C parts' allocations are seen by LeakSanitizer through
// malloc). The host unloads the policy at the end, so any leak report fails.
func TestReloadHammerSanitized(t *testing.T) {
	reloadHammer(t)
	bin := filepath.Join(art.dir, "reload_hammer_asan")
	if err := buildrecipe.Build(repoRoot(t), []string{"SANITIZE=1"}, buildrecipe.Step{Target: "reload-hammer", Out: bin}); err != nil {
		t.Skipf("no sanitizer build here: %v", err)
	}
	a, b, bad := "testhost/reload_pa.bpf.o", "testhost/reload_pb.bpf.o", "plugin/e2e/testdata/unsafe_oob.bpf.o"
	run := exec.Command(bin, "hammer", art.lib, a, b, bad)
	run.Dir = repoRoot(t)
	run.Env = append(cleanEnv(), envconfig.Control+"=0", envconfig.Policy+"="+a, envconfig.HammerThreads+"=4",
		envconfig.HammerCalls+"=5000", envconfig.HammerReloads+"=15", "ASAN_OPTIONS=detect_leaks=1:halt_on_error=1",
		"UBSAN_OPTIONS=halt_on_error=1")
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") || strings.Contains(string(out), "Sanitizer") {
		t.Fatalf("sanitized hammer: %v\n%s", err, out)
	}
}

// TestReloadHammerCatchesEmptySlot is the hammer's mutation test: a
// deliberate bug that empties the tuner slot for 200 us around each reload
// (as a reload that unpublished before publishing would) must make the
// hammer fail, on calls that ran no policy. Before the hammer asserted it,
// such a bug passed with a quarter of the calls running no policy.
func TestReloadHammerCatchesEmptySlot(t *testing.T) {
	bin := reloadHammer(t)
	a, b, bad := "testhost/reload_pa.bpf.o", "testhost/reload_pb.bpf.o", "plugin/e2e/testdata/unsafe_oob.bpf.o"
	cmd := exec.Command(bin, "hammer", art.lib, a, b, bad)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), envconfig.Control+"=0", envconfig.Policy+"="+a, envconfig.HammerCalls+"=20000",
		envconfig.HammerReloads+"=30", envconfig.HammerThreads+"=8", envconfig.HammerEmptyUS+"=200")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "PASS") {
		t.Fatalf("the hammer passed with the tuner slot emptied during reloads:\n%s", out)
	}
	if !strings.Contains(string(out), "ran no policy") {
		t.Fatalf("the hammer failed, but not on the calls that ran no policy:\n%s", out)
	}
}

// TestReloadSwapHammer swaps two prebuilt bundles (each swap a publish to
// every hook slot and the grace periods of a reload) under 8 calling
// threads: no call may be lost (run no policy) or be wrong, no update of
// the shared maps lost, no profiler event lost. The long run is
// NCCLBPF_HAMMER_SWAPS=1000000 (scripts/test-long.sh, BENCHMARKS.md).
func TestReloadSwapHammer(t *testing.T) {
	reloadHammer(t)
	a, b, bad := "testhost/reload_pa.bpf.o", "testhost/reload_pb.bpf.o", "plugin/e2e/testdata/unsafe_oob.bpf.o"
	env := []string{envconfig.Control + "=0", envconfig.Policy + "=" + a}
	if os.Getenv(envconfig.HammerSwaps) == "" {
		env = append(env, envconfig.HammerSwaps+"=5000", envconfig.HammerCalls+"=20000", envconfig.HammerThreads+"=8")
	}
	kv := runHammer(t, env, "hammer", art.lib, a, b, bad)
	for _, k := range []string{"swaps", "decisions_a", "decisions_b", "prof_events"} {
		if kv[k] == "" || kv[k] == "0" {
			t.Errorf("%s = %q: the hammer did not exercise it", k, kv[k])
		}
	}
	if kv["bad_decisions"] != "0" || kv["decisions_none"] != "0" {
		t.Errorf("bad decisions %s, calls without a policy %s", kv["bad_decisions"], kv["decisions_none"])
	}
	if kv["hits_a"] != kv["decisions_a"] || kv["hits_b"] != kv["decisions_b"] {
		t.Errorf("map hits A %s B %s, decisions A %s B %s", kv["hits_a"], kv["hits_b"], kv["decisions_a"], kv["decisions_b"])
	}
	t.Logf("%s swaps in %s s (%s ns each, grace period %s ns), %s calls", kv["swaps"], kv["swap_wall_s"],
		kv["per_swap_ns"], kv["grace_mean_ns"], kv["calls"])
}

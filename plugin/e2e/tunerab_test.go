package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// TestTunerABRoutesBlocks: the in-process comparison of scripts/gpu-tuner-cost.sh (AB=1) compares
// what it says it compares. testhost/gpu/nccl_allreduce.c drives the fake NCCL (two ranks, one
// process) with testhost/gpu/tuner_ab.c as the tuner, forwarding to the native C size_aware (A) and
// libncclbpf.so (B) by the block. libncclbpf.so's own count of getCollInfo calls, logged at
// finalize, must be exactly the groups of B's blocks: one warm-up block and one block per set, on
// each rank. A switch that forwarded every block to B, none of them, or the wrong ones fails it, as
// does a program that finds no switch to turn.
func TestTunerABRoutesBlocks(t *testing.T) {
	artifacts(t)
	root := repoRoot(t)
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake")
	ab := filepath.Join(dir, "libtunerab.so")
	bench := filepath.Join(dir, "nccl_allreduce")
	if err := buildSteps(root, []buildrecipe.Step{{Target: "fake-nccl", Out: fake}, {Target: "tuner-ab", Out: ab}}); err != nil {
		t.Fatal(err)
	}
	if err := buildrecipe.Build(root, append(targetEnv(), "NCCL_HOME="+fake, "CUDA_HOME="+fake),
		buildrecipe.Step{Target: "nccl-allreduce", Out: bench}); err != nil {
		t.Fatal(err)
	}
	const iters, sets = 40, 3
	run := func(extra ...string) (string, error) {
		cmd := hostCommand(bench, "bench", "2", strconv.Itoa(iters), strconv.Itoa(sets), "4096")
		cmd.Env = append(cleanEnv(), "FAKE_GPUS=2", "NCCL_DEBUG=INFO", "NCCL_TUNER_PLUGIN="+ab,
			"TUNER_AB_A="+art.native, "TUNER_AB_B="+art.lib, envconfig.Policy+"=builtin:size_aware", envconfig.Control+"=0")
		cmd.Env = append(cmd.Env, extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("NCCL_BENCH_AB=1")
	if err != nil {
		t.Fatalf("nccl_allreduce with tuner_ab: %v\n%s", err, out)
	}
	calls := regexp.MustCompile(`ncclbpf: communicator \S+ \(2 ranks.*?: (\d+) getCollInfo calls, (\d+) ran the policy`).FindAllStringSubmatch(out, -1)
	if len(calls) != 2 {
		t.Fatalf("want libncclbpf.so's finalize line for each of the 2 ranks, got %d:\n%s", len(calls), out)
	}
	want := strconv.Itoa((1 + sets) * iters)
	for _, c := range calls {
		if c[1] != want || c[2] != want {
			t.Errorf("B saw %s getCollInfo calls (%s ran the policy), want %s: one warm-up block and %d sets of %d groups",
				c[1], c[2], want, sets, iters)
		}
	}
	for _, k := range []string{"none", "A", "B"} {
		if !strings.Contains(out, fmt.Sprintf(`"median_cpu_us_per_call_%s":`, k)) {
			t.Errorf("no median for configuration %s in:\n%s", k, out)
		}
	}
	if !strings.Contains(out, `"cpu_us_per_call_ratio_B_A":`) || !strings.Contains(out, `"ok":true`) {
		t.Errorf("no B/A ratio or not ok:\n%s", out)
	}

	// Without NCCL_BENCH_AB nothing switches: tuner_ab forwards to none, B is never asked.
	out, err = run()
	if err != nil {
		t.Fatalf("nccl_allreduce without the switch: %v\n%s", err, out)
	}
	if m := regexp.MustCompile(`: (\d+) getCollInfo calls`).FindAllStringSubmatch(out, -1); len(m) != 2 || m[0][1] != "0" || m[1][1] != "0" {
		t.Errorf("without NCCL_BENCH_AB, want B never asked on either rank, got %v:\n%s", m, out)
	}

	// The switch must be found: another tuner than tuner_ab is refused with a reason.
	out, err = run("NCCL_BENCH_AB=1", "NCCL_TUNER_PLUGIN="+art.native)
	if err == nil || !strings.Contains(out, "tuner_ab") {
		t.Errorf("NCCL_BENCH_AB=1 with a tuner that has no switch: want a refusal naming tuner_ab, got %v:\n%s", err, out)
	}
}

package e2e

import (
	"bufio"
	"fmt"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/internal/tuner"
)

// The plugin is tested the way NCCL uses it: libncclbpf.so is built by
// the one recipe (scripts/build.sh) and loaded by a C host process
// (testhost/host.c), never into this Go test binary (two Go runtimes in one
// process do not work).

var (
	buildOnce sync.Once
	buildErr  error
	art       struct{ dir, lib, host, native string }
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the source tree")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// artifacts builds the library (with its test entry points, -tags
// ncclbpf_testing), the host and the native plugin once per test binary;
// NCCLBPF_TEST_LIB names a library to test instead of building one (built
// with that tag).
func artifacts(t *testing.T) {
	t.Helper()
	root := repoRoot(t)
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ncclbpf-plugin-test-")
		if err != nil {
			buildErr = err
			return
		}
		art.dir = dir
		art.lib = filepath.Join(dir, "libncclbpf.so")
		art.host = filepath.Join(dir, "host")
		art.native = filepath.Join(dir, "libnative-size-aware.so")
		steps := []buildrecipe.Step{
			// The test build: the production library lacks the entry points the hosts drive reloads with.
			{Target: "lib-testing", Out: art.lib},
			{Target: "host", Out: art.host},
			{Target: "native", Out: art.native},
		}
		if lib := os.Getenv(envconfig.TestLib); lib != "" {
			// A library built beforehand (to compare builds, or to save the build).
			art.lib, steps = lib, steps[1:]
		}
		buildErr = buildSteps(root, steps)
	})
	if buildErr != nil {
		t.Fatalf("building the plugin and the host: %v", buildErr)
	}
}

// buildSteps builds each artefact with the one recipe (scripts/build.sh),
// for the target architecture, stopping at the first failure.
func buildSteps(root string, steps []buildrecipe.Step) error {
	return buildrecipe.Build(root, targetEnv(), steps...)
}

// host runs the test host with args, the extra environment and stdin, and
// returns its stdout; a non-zero exit fails the test with the output.
func host(t *testing.T, env []string, stdin string, args ...string) string {
	t.Helper()
	out, _ := hostStderr(t, env, stdin, args...)
	return out
}

// hostStderr is host, returning the host's stderr as well.
func hostStderr(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := hostCommand(art.host, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errb.String())
	}
	return string(out), errb.String()
}

// cleanEnv is the test's environment without NCCLBPF_* settings (nor
// NCCL's rules file variable, which the plugin reads too).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NCCLBPF_") && !strings.HasPrefix(kv, "NCCL_TUNER_CONFIG_FILE=") {
			env = append(env, kv)
		}
	}
	return env
}

func TestPluginSymbolsAndShim(t *testing.T) {
	artifacts(t)
	out, err := exec.Command("nm", "-D", "--defined-only", art.lib).Output()
	if err != nil {
		t.Fatalf("nm: %v", err)
	}
	for v := 2; v <= 7; v++ {
		sym := fmt.Sprintf("ncclTunerPlugin_v%d", v)
		found := false
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) == 3 && f[2] == sym && (f[1] == "D" || f[1] == "R") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is not exported as a data symbol", sym)
		}
	}
	for v := 2; v <= 6; v++ {
		v := v
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			out := host(t, nil, "", "selftest", art.lib, strconv.Itoa(v))
			if !strings.Contains(out, "selftest v"+strconv.Itoa(v)+": ok") {
				t.Errorf("selftest output:\n%s", out)
			}
		})
	}
}

// call is one getCollInfo call in the host's script language.
type call struct {
	comm    int
	coll    int
	nBytes  uint64
	pipeOps int
	regBuff int
	table   [21]float32
}

func (c call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "call %d %d %d %d %d", c.comm, c.coll, c.nBytes, c.pipeOps, c.regBuff)
	for _, f := range c.table {
		fmt.Fprintf(&b, " %g", f)
	}
	return b.String()
}

type result struct {
	nch   int
	table [21]uint32
}

// parseResults reads the "res" lines of a run script's output.
func parseResults(t *testing.T, out string) []result {
	t.Helper()
	var rs []result
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "res" {
			continue
		}
		if len(f) != 23 {
			t.Fatalf("bad result line %q", sc.Text())
		}
		var r result
		r.nch, _ = strconv.Atoi(f[1])
		for i := range r.table {
			v, err := strconv.ParseUint(f[2+i], 16, 32)
			if err != nil {
				t.Fatalf("bad result line %q", sc.Text())
			}
			r.table[i] = uint32(v)
		}
		rs = append(rs, r)
	}
	return rs
}

func lineWith(out, prefix string) []string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix+" ") {
			return strings.Fields(l)[1:]
		}
	}
	return nil
}

// TestPluginBadPolicy: whatever is wrong with the policy, init succeeds,
// NCCL's table is untouched, getCollInfo succeeds and exactly one warning
// reaches NCCL's logger.
func TestPluginBadPolicy(t *testing.T) {
	artifacts(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.bpf.o")
	if err := os.WriteFile(garbage, []byte("this is not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(rules, []byte("allreduce,0,100,warp,simple,-1,-1,-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := [21]float32{}
	for i := range tbl {
		tbl[i] = float32(10 + i)
	}
	tbl[12], tbl[13], tbl[14] = -1, -1, -1
	var script strings.Builder
	for c := 0; c < 3; c++ {
		fmt.Fprintf(&script, "init %d %d 8 1 1 8 8\n", c, 100+c)
	}
	for i := 0; i < 20; i++ {
		fmt.Fprintln(&script, call{comm: i % 3, coll: 4, nBytes: uint64(1) << (i + 10), pipeOps: 1, table: tbl})
	}
	script.WriteString("warns\nstats\n")
	for name, env := range map[string][]string{
		"missing file":    {envconfig.Policy + "=" + filepath.Join(dir, "nope.bpf.o")},
		"not ELF":         {envconfig.Policy + "=" + garbage},
		"unknown builtin": {envconfig.Policy + "=builtin:nope"},
		"bad config":      {envconfig.PolicyConfig + "=size_lo"},
		"bad rules":       {envconfig.Policy + "=builtin:rules", envconfig.RulesFile + "=" + rules},
		"writes an input": {envconfig.Policy + "=" + testdata(t, "unsafe_write.bpf.o")},
		"unbounded index": {envconfig.Policy + "=" + testdata(t, "unsafe_oob.bpf.o")},
		"unknown section": {envconfig.Policy + "=" + testdata(t, "wrong_hook.bpf.o")},
	} {
		t.Run(name, func(t *testing.T) {
			for _, v := range []string{"5", "6", "4", "3"} {
				out := host(t, env, script.String(), "run", art.lib, v)
				for i, r := range parseResults(t, out) {
					for k, bits := range r.table {
						if bits != fbits(tbl[k]) {
							t.Fatalf("v%s call %d: cell %d changed to %#x", v, i, k, bits)
						}
					}
					if r.nch != 0 {
						t.Fatalf("v%s call %d: nChannels %d", v, i, r.nch)
					}
				}
				if w := lineWith(out, "warns"); len(w) != 1 || w[0] != "1" {
					t.Errorf("v%s: warnings %v, want exactly 1", v, w)
				}
				if s := lineWith(out, "stats"); len(s) != 6 || s[5] != "-1" {
					t.Errorf("v%s: stats %v, want load status -1", v, s)
				}
			}
			// tuner v2 (no cost table): algorithm, protocol and channels untouched
			out := host(t, env, "init 0 100 8 1 1 8 8\ncall2 0 4 4194304 0 0 1\ncall2 0 4 1024 1 1 1\nwarns\n", "run", art.lib, "2")
			if strings.Count(out, "res2 -1 -1 0\n") != 2 {
				t.Errorf("v2: decisions applied:\n%s", out)
			}
			if w := lineWith(out, "warns"); len(w) != 1 || w[0] != "1" {
				t.Errorf("v2: warnings %v, want exactly 1", w)
			}
		})
	}
}

func testdata(t *testing.T, name string) string {
	return filepath.Join(repoRoot(t), "plugin", "e2e", "testdata", name)
}

// TestPluginNoPolicy: NCCLBPF_POLICY=none runs nothing and logs no warning.
func TestPluginNoPolicy(t *testing.T) {
	artifacts(t)
	out := host(t, []string{envconfig.Policy + "=none"}, "", "policy", art.lib, "5", "noop")
	if !strings.Contains(out, "policy noop v5: ok") {
		t.Errorf("output:\n%s", out)
	}
	out = host(t, []string{envconfig.Policy + "=none"}, "init 0 1 2 1 1 2 2\nwarns\nstats\n", "run", art.lib, "6")
	if w := lineWith(out, "warns"); len(w) != 1 || w[0] != "0" {
		t.Errorf("warnings %v, want none", w)
	}
	if s := lineWith(out, "stats"); len(s) != 6 || s[5] != "1" {
		t.Errorf("stats %v, want load status 1", s)
	}
}

// TestNativeSizeAwareGrid checks the host's grid against the native
// comparison plugin, so that a wrong expectation in the host shows up here
// rather than as a difference in ncclbpf.
func TestNativeSizeAwareGrid(t *testing.T) {
	artifacts(t)
	out := host(t, nil, "", "policy", art.native, "5", "size_aware")
	if !strings.Contains(out, "policy size_aware v5: ok") {
		t.Errorf("output:\n%s", out)
	}
}

func fbits(f float32) uint32 { return math.Float32bits(f) }

// TestPolicyGrids runs the embedded noop and size_aware policies, JIT-
// compiled in libncclbpf.so, over the host's grid of collectives, sizes,
// ranks, nodes and tables for every tuner ABI version, and compares each
// result with the expected decision (size_aware: the native C logic).
func TestPolicyGrids(t *testing.T) {
	artifacts(t)
	for _, pol := range []string{"noop", "size_aware"} {
		for v := 2; v <= 6; v++ {
			out := host(t, []string{envconfig.Policy + "=builtin:" + pol}, "", "policy", art.lib, strconv.Itoa(v), pol)
			if !strings.Contains(out, fmt.Sprintf("policy %s v%d: ok", pol, v)) {
				t.Errorf("%s v%d:\n%s", pol, v, out)
			}
		}
	}
	// The tunables reach the program: with size_lo above every grid size
	// and size_hi at the top, size_aware never fires, which the grid
	// reports as a mismatch against the default thresholds.
	cmd := hostCommand(art.host, "policy", art.lib, "5", "size_aware")
	cmd.Env = append(cleanEnv(), envconfig.Policy+"=builtin:size_aware", envconfig.PolicyConfig+"=size_lo=1G")
	if out, err := cmd.Output(); err == nil {
		t.Errorf("size_lo=1G did not change size_aware's decisions:\n%s", out)
	}
}

// expectTable applies a decision to a cost table the way the shim does
// (channel counts are not passed when NCCL's pick is CollNet).
func expectTable(tbl [21]float32, a, p, ch int) ([21]float32, int) {
	switch {
	case a >= 0 && p >= 0:
		tbl[a*3+p] = 0
	case a >= 0 || p >= 0:
		for i := 0; i < 21; i++ {
			in := (a >= 0 && i/3 == a) || (p >= 0 && i%3 == p)
			if !in && tbl[i] >= 0 {
				tbl[i] = -1
			}
		}
	}
	if pa, _ := ncclabi.Pick(tbl); ch > 0 && (pa == 2 || pa == 3) {
		ch = 0
	}
	return tbl, ch
}

// TestPolicyRules checks the rules policy, with its table built from a
// rules file, against tuner.Decide (the example tuner's first-match semantics)
// over a grid of collectives, sizes, topologies and availability.
func TestPolicyRules(t *testing.T) {
	artifacts(t)
	dir := t.TempDir()
	const conf = `# rules for the test
allreduce,0,65535,tree,ll,-1,-1,-1
allreduce,65536,1048575,ring,ll128,8,1,-1
allreduce,1048576,4194303,-1,simple,-1,-1,4
allreduce,0,18446744073709551615,ring,simple,-1,-1,-1
allgather,1024,4096,default,simple,2,-1,8,1,-1
allgather,0,1000000,ring,-1,16,-1,-1
reducescatter,0,100,nvls,-1,-1,-1,-1,-1
broadcast,10,20000,pat,ll,-1,2,16,-1
broadcast,0,18446744073709551615,-1,-1,3,-1,-1
`
	path := filepath.Join(dir, "rules.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := tuner.ParseRules(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	type topo struct{ nodes, ranks int }
	topos := []topo{{1, 4}, {1, 8}, {2, 16}, {4, 32}}
	var script strings.Builder
	for i, tp := range topos {
		fmt.Fprintf(&script, "init %d %d %d %d %d %d %d\n", i, 50+i, tp.ranks, tp.nodes, tp.nodes, tp.ranks/tp.nodes, tp.ranks/tp.nodes)
	}
	type want struct {
		tbl [21]float32
		nch int
		why string
	}
	var wants []want
	sizes := []uint64{0, 9, 10, 100, 101, 1023, 1024, 4096, 4097, 20000, 20001, 65535, 65536, 1 << 20, 4194303, 4194304, 1 << 40}
	for ci, tp := range topos {
		for coll := 0; coll < tuner.NumColls; coll++ {
			for _, s := range sizes {
				for variant := 0; variant < 4; variant++ {
					var tbl [21]float32
					for k := range tbl {
						tbl[k] = float32(5 + k + int(s%7))
					}
					switch variant {
					case 1: // no tree, no PAT
						tbl[0], tbl[1], tbl[2], tbl[18], tbl[19], tbl[20] = -1, -1, -1, -1, -1, -1
					case 2: // no LL128, no NVLS
						for a := 0; a < 7; a++ {
							tbl[a*3+1] = -1
						}
						tbl[12], tbl[13], tbl[14] = -1, -1, -1
					case 3: // only ring/LL
						for k := range tbl {
							if k != 3 {
								tbl[k] = -1
							}
						}
					}
					for _, reg := range []int{0, 1} {
						c := call{comm: ci, coll: coll, nBytes: s, pipeOps: 1, regBuff: reg, table: tbl}
						script.WriteString(c.String() + "\n")
						a, p, ch := tuner.Decide(rules, coll, s, tp.nodes, tp.ranks, 1, reg, func(a, p int) bool { return tbl[a*3+p] >= 0 })
						wt, wch := expectTable(tbl, a, p, ch)
						wants = append(wants, want{wt, wch, fmt.Sprintf("%s nodes %d ranks %d reg %d variant %d: rule gives %d/%d/%d",
							hook.CollNames[coll], tp.nodes, tp.ranks, reg, variant, a, p, ch) + fmt.Sprintf(" size %d", s)})
					}
				}
			}
		}
	}
	script.WriteString("stats\n")
	for _, v := range []string{"5", "6", "4"} {
		out := host(t, []string{envconfig.Policy + "=builtin:rules", envconfig.RulesFile + "=" + path}, script.String(), "run", art.lib, v)
		got := parseResults(t, out)
		if len(got) != len(wants) {
			t.Fatalf("v%s: %d results for %d calls", v, len(got), len(wants))
		}
		bad := 0
		for i, w := range wants {
			ok := got[i].nch == w.nch
			for k := range w.tbl {
				ok = ok && got[i].table[k] == fbits(w.tbl[k])
			}
			if !ok && bad < 10 {
				bad++
				t.Errorf("v%s call %d (%s): got nch %d table %x, want nch %d", v, i, w.why, got[i].nch, got[i].table, w.nch)
			}
		}
		if s := lineWith(out, "stats"); len(s) != 6 || s[3] != "0" || s[5] != "0" {
			t.Errorf("v%s: stats %v: want no rejections and load status 0", v, s)
		}
	}
}

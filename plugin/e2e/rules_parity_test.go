package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/config"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
	"github.com/ncclbpf/ncclbpf/internal/tuner"
)

// readmeSection returns the first ```sh block of the README section whose
// heading is title.
func readmeSection(t *testing.T, title string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", title)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatalf("README section %q has no sh block", title)
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if i := strings.Index(l, "  #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestReadmeCSVTunerMigration runs the README's "From NCCL's CSV tuner to
// ncclbpf" commands: each `ncclbpf run` line exits 0 and names the rule
// that matched; the exported settings, given to an NCCL-like host loading
// libncclbpf.so, load the rules from NCCL_TUNER_CONFIG_FILE (the log counts
// them) and every decision is the one the first matching rule gives.
// (Mutation: without the NCCL_TUNER_CONFIG_FILE fallback the policy does
// not load; without the header row skipped the file is refused.)
func TestReadmeCSVTunerMigration(t *testing.T) {
	artifacts(t)
	_, ncclbpf := lockstepTools(t)
	root := repoRoot(t)
	env := map[string]string{}
	runs := 0
	for _, l := range readmeSection(t, "From NCCL's CSV tuner to ncclbpf") {
		f := strings.Fields(l)
		switch {
		case f[0] == "export" && len(f) == 2:
			k, v, _ := strings.Cut(f[1], "=")
			env[k] = v
		case f[0] == "ncclbpf":
			cmd := exec.Command(ncclbpf, f[1:]...)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", l, err, out)
			}
			if !regexp.MustCompile(`printk: rules: the rule on line \d+ matched`).Match(out) {
				t.Errorf("%s: no line names the rule that matched:\n%s", l, out)
			}
			runs++
		default:
			t.Fatalf("README command %q: the test knows export and ncclbpf lines only", l)
		}
	}
	if runs == 0 || env["NCCL_TUNER_PLUGIN"] != "$PWD/build/libncclbpf.so" || env[config.EnvTunerConfigFile] == "" {
		t.Fatalf("the README section lost its commands: runs %d, settings %v", runs, env)
	}
	rulesPath := env[config.EnvTunerConfigFile]
	rules, err := config.ParseRulesFile(filepath.Join(root, rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	var hostEnv []string
	for k, v := range env {
		if k != "NCCL_TUNER_PLUGIN" { // the host loads art.lib, the library this test built
			hostEnv = append(hostEnv, k+"="+v)
		}
	}
	hostEnv = append(hostEnv, "HOST_VERBOSE=1", envconfig.RulesLog+"=1")
	var tbl [21]float32
	for i := range tbl {
		tbl[i] = float32(20 + i)
	}
	type topo struct{ nodes, ranks int }
	topos := []topo{{1, 8}, {2, 16}, {4, 32}}
	var script strings.Builder
	var wantTbl [][21]float32
	var wantCh []int
	for c, tp := range topos {
		fmt.Fprintf(&script, "init %d %d %d %d 1 8 8\n", c, 500+c, tp.ranks, tp.nodes)
		for _, coll := range []int{2, 4} {
			for _, n := range []uint64{1024, 65536, 65537, 4 << 20, 4<<20 + 1, 1 << 30} {
				fmt.Fprintln(&script, call{comm: c, coll: coll, nBytes: n, pipeOps: 1, table: tbl})
				a, p, ch := tuner.Decide(rules, coll, n, tp.nodes, tp.ranks, 1, 0, func(a, p int) bool { return true })
				wt, wch := expectTable(tbl, a, p, ch)
				wantTbl, wantCh = append(wantTbl, wt), append(wantCh, wch)
			}
		}
	}
	script.WriteString("stats\n")
	cmd := hostCommand(art.host, "run", art.lib, "5")
	cmd.Dir = root // NCCL_TUNER_CONFIG_FILE is relative, as in the README
	cmd.Env = append(cleanEnv(), hostEnv...)
	cmd.Stdin = strings.NewReader(script.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	out := string(outb)
	if err != nil {
		t.Fatalf("host: %v\n%s\n%s", err, out, stderr.String())
	}
	if s := lineWith(out, "stats"); len(s) != 6 || s[5] != "0" {
		t.Fatalf("stats %v: the policy did not load\n%s", s, stderr.String())
	}
	if want := fmt.Sprintf("%d rules loaded from %s (%s)", len(rules), rulesPath, config.EnvTunerConfigFile); !strings.Contains(stderr.String(), want) {
		t.Errorf("NCCL's log does not say %q:\n%s", want, stderr.String())
	}
	if !strings.Contains(stderr.String(), "rules: the rule on line") {
		t.Errorf("%s=1: no matched rule in NCCL's log:\n%s", config.EnvRulesLog, stderr.String())
	}
	got := parseResults(t, out)
	if len(got) != len(wantTbl) {
		t.Fatalf("%d results for %d calls", len(got), len(wantTbl))
	}
	applied := 0
	for i := range got {
		same := got[i].nch == wantCh[i]
		for k := range tbl {
			same = same && got[i].table[k] == fbits(wantTbl[i][k])
		}
		if !same {
			t.Errorf("call %d: nch %d table %x, want nch %d table %v", i, got[i].nch, got[i].table, wantCh[i], wantTbl[i])
		}
		if wantTbl[i] != tbl {
			applied++
		}
	}
	if applied == 0 {
		t.Error("no call was decided by a rule: the test checks nothing")
	}
}

// TestRulesVariablesLeftOver: a rules variable (NCCLBPF_RULES_FILE or
// NCCL_TUNER_CONFIG_FILE) left set, even naming a bad file, does not stop a
// policy without a rule table from loading; NCCL's log notes it is ignored.
func TestRulesVariablesLeftOver(t *testing.T) {
	artifacts(t)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("not,a,rule\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{config.EnvRulesFile, config.EnvTunerConfigFile} {
		for _, pol := range []string{"builtin:size_aware", "builtin:noop"} {
			t.Run(v+" "+pol, func(t *testing.T) {
				out, stderr := hostStderr(t, []string{envconfig.Policy + "=" + pol, v + "=" + bad, "HOST_VERBOSE=1"},
					"init 0 1 8 1 1 8 8\nwarns\nstats\n", "run", art.lib, "5")
				if s := lineWith(out, "stats"); len(s) != 6 || s[5] != "0" {
					t.Errorf("stats %v, want load status 0\n%s", s, stderr)
				}
				if w := lineWith(out, "warns"); len(w) != 1 || w[0] != "0" {
					t.Errorf("warnings %v, want none\n%s", w, stderr)
				}
				if want := v + "=" + bad + " ignored: the policy has no rule table"; !strings.Contains(stderr, want) {
					t.Errorf("NCCL's log does not say %q:\n%s", want, stderr)
				}
				if n := len(stderrLines(stderr)); n != 0 {
					t.Errorf("%d failure lines on stderr:\n%s", n, stderr)
				}
			})
		}
	}
}

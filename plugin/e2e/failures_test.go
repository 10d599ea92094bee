package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// stderrLines returns the lines of the host's stderr the library wrote
// (they start with "ncclbpf:"); the host's own logger echo (HOST_VERBOSE)
// is not set in these tests.
func stderrLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "ncclbpf:") {
			out = append(out, l)
		}
	}
	return out
}

// failureScript initialises three communicators with the tuner's init
// (tryinit: its result, without failing the host), makes a call on each
// and reports warnings and statistics.
func failureScript(tbl [21]float32) string {
	var b strings.Builder
	for c := 0; c < 3; c++ {
		fmt.Fprintf(&b, "tryinit %d %d 8 1 1 8 8\n", c, 300+c)
	}
	for c := 0; c < 3; c++ {
		fmt.Fprintln(&b, call{comm: c, coll: 4, nBytes: 8 << 20, pipeOps: 1, table: tbl})
	}
	b.WriteString("warns\nstats\n")
	return b.String()
}

func failureTable() [21]float32 {
	var tbl [21]float32
	for i := range tbl {
		tbl[i] = float32(10 + i)
	}
	return tbl
}

// policyFailures are settings under which the policy does not load.
func policyFailures(t *testing.T) map[string][]string {
	dir := t.TempDir()
	badRules := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(badRules, []byte("allreduce,0,100,ring\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noRules := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(noRules, []byte("# nothing yet\ncollective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string][]string{
		"missing policy file": {envconfig.Policy + "=" + filepath.Join(dir, "nope.bpf.o")},
		"config typo":         {envconfig.Policy + "=builtin:size_aware", envconfig.PolicyConfig + "=size_lo 4M"},
		"bad rules file":      {envconfig.Policy + "=builtin:rules", envconfig.RulesFile + "=" + badRules},
		"rules without rules": {envconfig.Policy + "=builtin:rules"},
		"rules file, no rule": {envconfig.Policy + "=builtin:rules", "NCCL_TUNER_CONFIG_FILE=" + noRules},
		"rejected policy":     {envconfig.Policy + "=" + testdata(t, "unsafe_oob.bpf.o")},
	}
}

// failureWhy is what the stderr line says for each of policyFailures.
var failureWhy = map[string]string{
	"missing policy file": "no such file or directory",
	"config typo":         envconfig.PolicyConfig,
	"bad rules file":      "line 1",
	"rules without rules": "no rules: the policy takes its decisions from a rules file and none is given",
	"rules file, no rule": "no rules: NCCL_TUNER_CONFIG_FILE",
	"rejected policy":     "rejected",
}

// TestLoadFailureOneStderrLine: a policy, configuration or rules file that
// does not load is said on stderr in exactly one line per process, however
// many communicators the process initialises, whether or not NCCL's log
// shows warnings; every init succeeds and NCCL's decisions stay untouched
// (the default mode). A policy that loads writes nothing to stderr.
// (Mutation: without the fprintf in nb_do_load no line appears; printing
// at each init gives three.)
func TestLoadFailureOneStderrLine(t *testing.T) {
	artifacts(t)
	tbl := failureTable()
	script := failureScript(tbl)
	for name, env := range policyFailures(t) {
		t.Run(name, func(t *testing.T) {
			out, stderr := hostStderr(t, env, script, "run", art.lib, "5")
			lines := stderrLines(stderr)
			if len(lines) != 1 {
				t.Fatalf("%d lines from the library on stderr, want exactly 1:\n%s", len(lines), stderr)
			}
			if !strings.Contains(lines[0], "NCCL's default tuning stays in effect") {
				t.Errorf("the line does not say NCCL's defaults stay: %s", lines[0])
			}
			if why := failureWhy[name]; !strings.Contains(lines[0], why) {
				t.Errorf("the line does not say %q: %s", why, lines[0])
			}
			if got := strings.Count(out, "init 0\n"); got != 3 {
				t.Errorf("%d of 3 inits succeeded:\n%s", got, out)
			}
			for i, r := range parseResults(t, out) {
				for k, bits := range r.table {
					if bits != fbits(tbl[k]) {
						t.Fatalf("call %d: cell %d changed: NCCL's defaults not kept", i, k)
					}
				}
			}
			if s := lineWith(out, "stats"); len(s) != 6 || s[5] != "-1" {
				t.Errorf("stats %v, want load status -1", s)
			}
		})
	}
	t.Run("policy loads", func(t *testing.T) {
		_, stderr := hostStderr(t, []string{envconfig.Policy + "=builtin:size_aware"}, script, "run", art.lib, "5")
		if lines := stderrLines(stderr); len(lines) != 0 {
			t.Errorf("a policy that loads wrote to stderr:\n%s", stderr)
		}
	})
}

// TestStrictModeFailsInit: under NCCLBPF_STRICT (1/true/yes/on, any case) a
// policy that does not load makes every tuner init return an error
// (ncclInvalidUsage: NCCL fails the communicator's init), with the one
// stderr line saying so; a policy that loads is unaffected; 0/false/no/off
// is the default mode; any other value is an error, taken as strict.
// (Mutation: dropping the strict check in nb_init lets the inits succeed.)
func TestStrictModeFailsInit(t *testing.T) {
	artifacts(t)
	tbl := failureTable()
	script := failureScript(tbl)
	for name, env := range policyFailures(t) {
		for _, v := range []string{"1", "TRUE", "yes", "on"} {
			t.Run(name+" "+v, func(t *testing.T) {
				out, stderr := hostStderr(t, append(env, envconfig.Strict+"="+v), script, "run", art.lib, "5")
				if got := strings.Count(out, "init 5\n"); got != 3 {
					t.Errorf("%d of 3 inits failed with ncclInvalidUsage (5), want all:\n%s", got, out)
				}
				lines := stderrLines(stderr)
				if len(lines) != 1 || !strings.Contains(lines[0], "NCCLBPF_STRICT is set: the library's init fails") {
					t.Errorf("stderr, want one line saying the init fails:\n%s", stderr)
				}
			})
		}
	}
	for _, v := range []string{"0", "false", "No", "off", ""} {
		t.Run("missing policy, NCCLBPF_STRICT="+v, func(t *testing.T) {
			out, _ := hostStderr(t, []string{envconfig.Policy + "=/nonexistent/p.bpf.o", envconfig.Strict + "=" + v}, script, "run", art.lib, "5")
			if got := strings.Count(out, "init 0\n"); got != 3 {
				t.Errorf("%d of 3 inits succeeded, want all (default mode):\n%s", got, out)
			}
		})
	}
	t.Run("policy loads", func(t *testing.T) {
		out, stderr := hostStderr(t, []string{envconfig.Policy + "=builtin:size_aware", envconfig.Strict + "=1"}, script, "run", art.lib, "6")
		if got := strings.Count(out, "init 0\n"); got != 3 {
			t.Errorf("%d of 3 inits succeeded with a policy that loads:\n%s", got, out)
		}
		if s := lineWith(out, "stats"); len(s) != 6 || s[5] != "0" || s[1] != "3" {
			t.Errorf("stats %v, want 3 policy calls and load status 0", s)
		}
		if len(stderrLines(stderr)) != 0 {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
	t.Run("unknown value", func(t *testing.T) {
		out, stderr := hostStderr(t, []string{envconfig.Policy + "=builtin:size_aware", envconfig.Strict + "=maybe"}, script, "run", art.lib, "5")
		if got := strings.Count(out, "init 5\n"); got != 3 {
			t.Errorf("%d of 3 inits failed, want all (an unknown value is taken as strict):\n%s", got, out)
		}
		lines := stderrLines(stderr)
		if len(lines) != 1 || !strings.Contains(lines[0], `NCCLBPF_STRICT="maybe" is not one of`) {
			t.Errorf("stderr, want one line naming the value:\n%s", stderr)
		}
	})
	t.Run("tuner v2", func(t *testing.T) {
		out, _ := hostStderr(t, []string{envconfig.Policy + "=/nonexistent/p.bpf.o", envconfig.Strict + "=1"}, "tryinit 0 1 8 1 1 8 8\n", "run", art.lib, "2")
		if !strings.Contains(out, "init 5\n") {
			t.Errorf("tuner v2 init did not fail:\n%s", out)
		}
	})
}

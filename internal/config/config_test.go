package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/tuner"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(nil))
	if err != nil || c.Policy != DefaultPolicy || c.Builtin() != "noop" {
		t.Errorf("default: %+v, %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{EnvPolicy: "None"}))
	if err != nil || c.Policy != "" {
		t.Errorf("none: %+v, %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{EnvPolicy: "/x/p.bpf.o", EnvPolicyConfig: "a=4M, b=0x10,c=-1,d=true", EnvRulesFile: "r.conf"}))
	if err != nil || c.Policy != "/x/p.bpf.o" || c.Builtin() != "" || c.RulesFile != "r.conf" {
		t.Fatalf("file: %+v, %v", c, err)
	}
	want := []Var{{"a", 4 << 20}, {"b", 16}, {"c", ^uint64(0)}, {"d", 1}}
	if len(c.Vars) != len(want) {
		t.Fatalf("vars %+v", c.Vars)
	}
	for i := range want {
		if c.Vars[i] != want[i] {
			t.Errorf("var %d = %+v, want %+v", i, c.Vars[i], want[i])
		}
	}
	for _, bad := range []string{"a", "=1", "a=x", "a=1,a=2", "a=99999999999G"} {
		if _, err := ConfigFromEnv(env(map[string]string{EnvPolicyConfig: bad})); err == nil || !strings.Contains(err.Error(), EnvPolicyConfig) {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

// TestSettingErrors: a setting that cannot be read says how to write it,
// with no parser's internals.
func TestSettingErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"size_lo=8M size_hi=1G", `"size_lo=8M size_hi=1G": separate settings with commas, not spaces: "size_lo=8M,size_hi=1G"`},
		{"a=1, b = 2 c=3", `separate settings with commas, not spaces: "a=1,b=2,c=3"`},
		{"a=1\tb=2", `separate settings with commas, not spaces: "a=1,b=2"`},
		{"a=x", `setting "a=x": value "x" is not an integer (decimal or 0x hex, optionally negative, with an optional K, M or G suffix; or true, false)`},
		{"a=1 2", `value "1 2" has blanks in it: one integer per setting`},
		{"a=010x", `value "010x" is not an integer`},
		{"a=0b101", `value "0b101" is not an integer`},
		{"a=1_000", `value "1_000" is not an integer`},
		{"a=+1", `value "+1" is not an integer`},
		{"a=18446744073709551616", `value "18446744073709551616" does not fit 64 bits`},
	} {
		_, err := ParseVars(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "strconv") {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
	env := map[string]string{EnvPolicyConfig: "size_lo=8M size_hi=1G"}
	if _, err := ConfigFromEnv(func(k string) string { return env[k] }); err == nil ||
		err.Error() != `NCCLBPF_POLICY_CONFIG: "size_lo=8M size_hi=1G": separate settings with commas, not spaces: "size_lo=8M,size_hi=1G"` {
		t.Errorf("%s with spaces: %v", EnvPolicyConfig, err)
	}
	// Decimal is decimal: a leading zero is not octal.
	if v, err := ParseInt("010"); err != nil || v != 10 {
		t.Errorf("010 = %d, %v", v, err)
	}
	if v, err := ParseInt("0x10"); err != nil || v != 16 {
		t.Errorf("0x10 = %d, %v", v, err)
	}
	if v, err := ParseVars("a = 1 , b=2"); err != nil || len(v) != 2 || v[0].Value != 1 || v[1].Value != 2 {
		t.Errorf("blanks around = and commas: %+v, %v", v, err)
	}
}

// TestRulesFileVariables: NCCLBPF_RULES_FILE names the rules file; without
// it NCCL's NCCL_TUNER_CONFIG_FILE does (a job moving from NCCL's example
// tuner keeps its setting); RulesFrom says which.
func TestRulesFileVariables(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		env        map[string]string
		file, from string
	}{
		{map[string]string{}, "", ""},
		{map[string]string{EnvTunerConfigFile: "nccl.conf"}, "nccl.conf", EnvTunerConfigFile},
		{map[string]string{EnvRulesFile: "r.csv"}, "r.csv", EnvRulesFile},
		{map[string]string{EnvRulesFile: "r.csv", EnvTunerConfigFile: "nccl.conf"}, "r.csv", EnvRulesFile},
		{map[string]string{EnvRulesFile: " ", EnvTunerConfigFile: "nccl.conf"}, "nccl.conf", EnvTunerConfigFile},
	} {
		c, err := ConfigFromEnv(env(tc.env))
		if err != nil || c.RulesFile != tc.file || c.RulesFrom != tc.from {
			t.Errorf("%v: rules file %q from %q (%v), want %q from %q", tc.env, c.RulesFile, c.RulesFrom, err, tc.file, tc.from)
		}
	}
	c, _ := ConfigFromEnv(env(map[string]string{EnvRulesLog: "1"}))
	if !c.RulesLog || len(c.Warnings) != 0 {
		t.Errorf("%s=1: %+v", EnvRulesLog, c)
	}
	c, _ = ConfigFromEnv(env(map[string]string{EnvRulesLog: "loud"}))
	if c.RulesLog || len(c.Warnings) != 1 {
		t.Errorf("%s=loud: %+v, want off with a warning", EnvRulesLog, c)
	}
}

// TestRules: the plugin and `ncclbpf run` decide with Config.Rules. A
// policy with a rule table needs a file with a rule; for one without, the
// file and the log switch are ignored with a note.
func TestRules(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.csv")
	empty := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(one, []byte("allreduce,0,65536,ring,simple,-1,-1,-1,-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table := func(name string) bool { return name == tuner.RulesVar || name == tuner.RulesLogVar }
	none := func(string) bool { return false }
	for _, tc := range []struct {
		cfg    Config
		hasVar func(string) bool
		err    string
		notes  []string
		rules  int
		log    bool
	}{
		{Config{Policy: "p"}, table, "p: no rules: the policy takes its decisions from a rules file and none is given; set NCCLBPF_RULES_FILE", nil, 0, false},
		{Config{Policy: "p", RulesFile: empty, RulesFrom: EnvRulesFile}, table, "p: no rules: " + EnvRulesFile + " " + empty + " has no rule", nil, 0, false},
		{Config{Policy: "p", RulesFile: one, RulesFrom: EnvRulesFile, RulesLog: true}, table, "",
			[]string{"1 rules loaded from " + one + " (" + EnvRulesFile + ")", "the rule that matches each call is logged (rate-limited)"}, 1, true},
		{Config{Policy: "p", RulesFile: one, RulesFrom: "--rules", RulesLog: true}, none, "",
			[]string{"--rules=" + one + " ignored: the policy has no rule table", EnvRulesLog + " ignored: the policy has no rule table"}, 0, false},
		{Config{Policy: "p"}, none, "", nil, 0, false},
	} {
		r, err := tc.cfg.Rules(tc.hasVar, "")
		if (err != nil) != (tc.err != "") || (err != nil && !strings.HasPrefix(err.Error(), tc.err)) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.err)
			continue
		}
		if strings.Join(r.Notes, "|") != strings.Join(tc.notes, "|") || r.Rules != tc.rules || r.Log != tc.log || (r.Table != nil) != (tc.rules > 0) {
			t.Errorf("%+v: %+v, want notes %q, %d rules, log %v", tc.cfg, r, tc.notes, tc.rules, tc.log)
		}
	}
}

// TestTightenEq: the blanks around "=" go, as `\s*=\s*` replaced by "="
// would drop them, and nothing else changes.
func TestTightenEq(t *testing.T) {
	for in, want := range map[string]string{
		"a=1":         "a=1",
		"a = 1":       "a=1",
		"a\t=\r\n1 b": "a=1 b",
		"a = = b":     "a==b",
		" a =1 b= 2 ": " a=1 b=2 ",
		"=":           "=",
		" = ":         "=",
		"a\v=1":       "a\v=1",
		"no equals  ": "no equals  ",
	} {
		if got := tightenEq(in); got != want {
			t.Errorf("tightenEq(%q) = %q, want %q", in, got, want)
		}
	}
}

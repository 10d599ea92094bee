// Package config is what libncclbpf.so reads from outside, without NCCL
// or cgo: its configuration from the environment (the variables are listed
// in package envconfig), policy objects and rules files (regular files of
// bounded size only) and activation manifests. Package plugin applies it;
// package plugin/e2e tests the library from C host processes.
package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// Environment variables read by libncclbpf.so (once per process, in the
// first tuner init); envconfig lists them all.
const (
	// EnvPolicy names the policy object: a path to a .bpf.o, "builtin:NAME"
	// for a policy embedded in the library (noop, size_aware, rules), or
	// "none" for no policy at all. Unset or empty: builtin:noop.
	EnvPolicy = envconfig.Policy
	// EnvPolicyConfig sets `volatile const` variables of the policy by
	// name: "name=value,name=value". Values are integers (decimal, 0x hex,
	// optional K/M/G binary suffix) or true/false.
	EnvPolicyConfig = envconfig.PolicyConfig
	// EnvRulesFile names a rules file in the format of NCCL's example CSV
	// tuner; it fills the policy's rule table (see ParseRules).
	EnvRulesFile = envconfig.RulesFile
	// EnvTunerConfigFile is NCCL's example CSV tuner's variable for its
	// rules file; it is read when EnvRulesFile is unset, so that a job
	// moving from that tuner keeps its setting.
	EnvTunerConfigFile = envconfig.TunerConfigFile
	// EnvStrict makes a policy that does not load fail the library's init.
	EnvStrict = envconfig.Strict
	// EnvRulesLog makes the rules policy log which rule matched each call.
	EnvRulesLog = envconfig.RulesLog
)

// DefaultPolicy is the policy used when EnvPolicy is unset.
const DefaultPolicy = "builtin:noop"

// Config is the plugin's configuration. It is immutable once built.
type Config struct {
	// Policy is a file path or "builtin:NAME"; "" means no policy.
	Policy string
	// Vars are the variable settings in the order given.
	Vars []Var
	// RulesFile is the rules file, "" if none.
	RulesFile string
	// RulesFrom is the variable that named RulesFile: EnvRulesFile, or
	// EnvTunerConfigFile when EnvRulesFile is unset.
	RulesFrom string
	// RulesLog asks the rules policy to log which rule matched each call.
	RulesLog bool
	// Warnings are settings that were not understood and were ignored.
	Warnings []string
}

// Var is one "name=value" setting of a policy variable.
type Var struct {
	Name  string
	Value uint64 // two's complement for negative values
}

// ConfigFromEnv builds the configuration from the environment (getenv is
// os.Getenv, or a map lookup in tests).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Policy: strings.TrimSpace(getenv(EnvPolicy)), RulesFile: strings.TrimSpace(getenv(EnvRulesFile)), RulesFrom: EnvRulesFile}
	if c.RulesFile == "" {
		c.RulesFile, c.RulesFrom = strings.TrimSpace(getenv(EnvTunerConfigFile)), EnvTunerConfigFile
	}
	if c.RulesFile == "" {
		c.RulesFrom = ""
	}
	var warn string
	if c.RulesLog, warn = envconfig.ParseSwitch(EnvRulesLog, getenv(EnvRulesLog)); warn != "" {
		c.Warnings = append(c.Warnings, warn)
	}
	switch {
	case c.Policy == "":
		c.Policy = DefaultPolicy
	case strings.EqualFold(c.Policy, "none"):
		c.Policy = ""
	}
	vars, err := ParseVars(getenv(EnvPolicyConfig))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvPolicyConfig, err)
	}
	c.Vars = vars
	return c, nil
}

// StrictFromEnv reads EnvStrict (envconfig.ParseStrict): whether a policy
// that does not load fails the library's init. A value it does not know
// is an error, and strict is then true.
func StrictFromEnv(getenv func(string) string) (bool, error) {
	return envconfig.ParseStrict(getenv(EnvStrict))
}

// Builtin returns the name of the embedded policy c.Policy names, or "".
func (c Config) Builtin() string {
	if name, ok := strings.CutPrefix(c.Policy, "builtin:"); ok {
		return name
	}
	return ""
}

// ParseVars parses "name=value,name=value". An empty string gives no vars.
// Settings separated by spaces instead of commas are refused with the
// string written as it should be.
func ParseVars(s string) ([]Var, error) {
	if fixed, ok := spaceSeparated(s); ok {
		return nil, fmt.Errorf("%q: separate settings with commas, not spaces: %q", s, fixed)
	}
	var out []Var
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, val, ok := strings.Cut(item, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" {
			return nil, fmt.Errorf("setting %q: want name=value", item)
		}
		if seen[name] {
			return nil, fmt.Errorf("setting %q: %s is set twice", item, name)
		}
		seen[name] = true
		v, err := ParseInt(val)
		if err != nil {
			return nil, fmt.Errorf("setting %q: %w", item, err)
		}
		out = append(out, Var{Name: name, Value: v})
	}
	return out, nil
}

// spaceSeparated reports whether s has settings separated by blanks
// ("a=1 b=2"), and returns s with commas between them.
func spaceSeparated(s string) (string, bool) {
	var items []string
	found := false
	for _, item := range strings.Split(s, ",") {
		item = tightenEq(strings.TrimSpace(item))
		if strings.Count(item, "=") > 1 && strings.ContainsAny(item, " \t\r\n") {
			found = true
		}
		items = append(items, strings.Join(strings.Fields(item), ","))
	}
	return strings.Join(items, ","), found
}

// blanks are what a blank around "=" may be.
const blanks = " \t\n\f\r"

// tightenEq drops the blanks around every "=" of s ("a = 1" is "a=1").
func tightenEq(s string) string {
	parts := strings.Split(s, "=")
	for i := range parts {
		if i > 0 {
			parts[i] = strings.TrimLeft(parts[i], blanks)
		}
		if i < len(parts)-1 {
			parts[i] = strings.TrimRight(parts[i], blanks)
		}
	}
	return strings.Join(parts, "=")
}

var suffixes = map[string]uint64{"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}

// ParseInt parses an integer setting: decimal or 0x hex, optionally
// negative, with an optional K/M/G (binary) suffix; "true" is 1, "false" 0.
// Negative values are returned in two's complement.
func ParseInt(s string) (uint64, error) {
	switch strings.ToLower(s) {
	case "true":
		return 1, nil
	case "false":
		return 0, nil
	}
	num, mul := s, uint64(1)
	low := strings.ToLower(s)
	keys := make([]string, 0, len(suffixes))
	for k := range suffixes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if strings.HasSuffix(low, k) && !strings.HasPrefix(low, "0x") {
			num, mul = s[:len(s)-len(k)], suffixes[k]
			break
		}
	}
	neg := strings.HasPrefix(num, "-")
	if neg {
		num = num[1:]
	}
	if f := strings.Fields(s); len(f) > 1 {
		if strings.Contains(s, "=") {
			return 0, fmt.Errorf("value %q runs into another setting: separate settings with commas, not spaces (a=1,b=2)", s)
		}
		return 0, fmt.Errorf("value %q has blanks in it: one integer per setting", s)
	}
	base := 10
	if h, ok := strings.CutPrefix(strings.ToLower(num), "0x"); ok {
		num, base = h, 16
	}
	v, err := strconv.ParseUint(num, base, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("value %q does not fit 64 bits", s)
	}
	if err != nil || strings.HasPrefix(num, "+") {
		return 0, fmt.Errorf("value %q is not an integer (decimal or 0x hex, optionally negative, with an optional K, M or G suffix; or true, false)", s)
	}
	if mul > 1 && v > ^uint64(0)/mul {
		return 0, fmt.Errorf("value %q overflows 64 bits", s)
	}
	v *= mul
	if neg {
		if v > 1<<63 {
			return 0, fmt.Errorf("value %q overflows int64", s)
		}
		v = -v
	}
	return v, nil
}

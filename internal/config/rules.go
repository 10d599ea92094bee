package config

import (
	"fmt"

	"github.com/ncclbpf/ncclbpf/internal/tuner"
)

// RulesLoad is what the rules settings make of one policy's load: the rule
// table to fill (tuner.RulesVar) and whether to switch on its match log
// (tuner.RulesLogVar). The plugin and `ncclbpf run` both decide with
// Config.Rules, so that they accept and refuse the same policies.
type RulesLoad struct {
	// Table is the encoded rule table, nil for a policy without one.
	Table []byte
	// Rules is the number of rules in Table.
	Rules int
	// Log asks for the policy's match log (it has the switch and c.RulesLog
	// is set).
	Log bool
	// Notes say what became of the settings, one line each.
	Notes []string
}

// Rules applies c's rules settings (RulesFile, RulesFrom, RulesLog) to a
// policy object; hasVar reports whether the object has a global variable
// of that name. A policy with a rule table needs a rules file with at least
// one rule; a rules file or the log switch given for a policy without a
// table is noted and ignored. howToGive ends the error for a missing file
// (how to name one); "" names the environment variables.
func (c Config) Rules(hasVar func(name string) bool, howToGive string) (RulesLoad, error) {
	var out RulesLoad
	from := c.RulesFrom
	if from == "" {
		from = EnvRulesFile
	}
	if !hasVar(tuner.RulesVar) {
		if c.RulesFile != "" {
			out.Notes = append(out.Notes, fmt.Sprintf("%s=%s ignored: the policy has no rule table", from, c.RulesFile))
		}
		if c.RulesLog {
			out.Notes = append(out.Notes, EnvRulesLog+" ignored: the policy has no rule table")
		}
		return out, nil
	}
	if c.RulesFile == "" {
		if howToGive == "" {
			howToGive = fmt.Sprintf("set %s (or NCCL's %s) to a file in NCCL's example CSV tuner format", EnvRulesFile, EnvTunerConfigFile)
		}
		return out, fmt.Errorf("%s: no rules: the policy takes its decisions from a rules file and none is given; %s",
			c.Policy, howToGive)
	}
	rules, err := ParseRulesFile(c.RulesFile)
	if err != nil {
		return out, fmt.Errorf("%s: %s %w", c.Policy, from, err)
	}
	table, err := tuner.RulesTable(rules)
	if err != nil {
		return out, fmt.Errorf("%s: %s %s: %w", c.Policy, from, c.RulesFile, err)
	}
	if len(rules) == 0 {
		return out, fmt.Errorf("%s: no rules: %s %s has no rule, only blank lines, comments or a header; "+
			"the policy would leave every call to NCCL", c.Policy, from, c.RulesFile)
	}
	out.Table, out.Rules = table, len(rules)
	out.Notes = append(out.Notes, fmt.Sprintf("%d rules loaded from %s (%s)", len(rules), c.RulesFile, from))
	if c.RulesLog {
		if !hasVar(tuner.RulesLogVar) {
			out.Notes = append(out.Notes, fmt.Sprintf("%s ignored: the policy has no %s setting", EnvRulesLog, tuner.RulesLogVar))
		} else {
			out.Log = true
			out.Notes = append(out.Notes, "the rule that matches each call is logged (rate-limited)")
		}
	}
	return out, nil
}

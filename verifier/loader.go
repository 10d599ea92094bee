package verifier

import (
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
)

// ForProgram returns the Config that verifies program p of collection c
// against hook h: the collection's maps, p's BTF line information as the
// Source of error positions (or, without any, the hint to rebuild with
// -g), and p's declared context type.
func ForProgram(c *loader.CollectionSpec, p *loader.ProgramSpec, h *hook.Hook) *Config {
	cfg := &Config{Hook: h, Maps: c.Maps, Source: p.Source, ContextType: p.ContextType}
	if !p.HasLineInfo() {
		cfg.NoSourceHint = loader.NoDebugInfoHint
	}
	return cfg
}

// VerifyCollection verifies the programs of c together, as one bundle
// (VerifyTogether): program i against hooks[i], with ForProgram's Config.
// A program whose hook is nil is left out: its result and error are nil
// and its writes do not count. local says, for each map of c, whether a
// program writes it (its contents may differ between ranks).
func VerifyCollection(c *loader.CollectionSpec, hooks []*hook.Hook) (results []*Result, errs []error, local []bool) {
	n := len(c.Programs)
	results, errs = make([]*Result, n), make([]error, n)
	var units []Unit
	var at []int
	for i, p := range c.Programs {
		if i >= len(hooks) || hooks[i] == nil {
			continue
		}
		units = append(units, Unit{Insns: p.Insns, Config: *ForProgram(c, p, hooks[i])})
		at = append(at, i)
	}
	res, es, local := VerifyTogether(c.Maps, units)
	for k, i := range at {
		results[i], errs[i] = res[k], es[k]
	}
	return results, errs, local
}

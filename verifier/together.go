package verifier

import (
	"github.com/ncclbpf/ncclbpf/asm"
	"github.com/ncclbpf/ncclbpf/loader"
)

// Unit is one program of a bundle, for VerifyTogether.
type Unit struct {
	// Insns are the program's instructions.
	Insns []asm.Instruction
	// Config says how to verify it; its Maps are ignored (VerifyTogether
	// gives every program the bundle's maps).
	Config Config
}

// VerifyTogether verifies the programs of one bundle, which share maps.
// Rank uniformity is a property of the bundle: a map that any program
// writes is local (its contents may differ between ranks), so a program
// that Decides may not decide on it. VerifyTogether verifies the programs
// whose hook does not decide first, then the deciding ones with the maps
// the accepted programs write marked local, again until no accepted
// program writes a map not yet local. A rejected program's writes do not
// count (it will not run). It returns each program's result or error, in
// the order of units, and for each map whether it is local.
//
// The units whose Config has no Budget draw on one shared work budget
// (of the largest Complexity among them), so the time an object takes to
// verify is bounded whatever the number of programs in it.
func VerifyTogether(maps []*loader.MapSpec, units []Unit) ([]*Result, []error, []bool) {
	local := make([]bool, len(maps))
	results := make([]*Result, len(units))
	errs := make([]error, len(units))
	steps := 0
	for _, u := range units {
		steps = max(steps, u.Config.Complexity)
	}
	shared := NewBudget(steps)
	run := func(i int) {
		cfg := units[i].Config
		if cfg.Budget == nil {
			cfg.Budget = shared
		}
		cfg.Maps, cfg.local = maps, local
		results[i], errs[i] = cfg.Verify(units[i].Insns, nil)
	}
	markWrites := func() bool {
		changed := false
		for _, r := range results {
			if r == nil {
				continue
			}
			for _, m := range r.MapsWritten {
				if m >= 0 && m < len(local) && !local[m] {
					local[m] = true
					changed = true
				}
			}
		}
		return changed
	}
	decides := func(i int) bool { return units[i].Config.Hook != nil && units[i].Config.Hook.Decides }
	for i := range units {
		if !decides(i) {
			run(i)
		}
	}
	markWrites()
	for round := 0; round <= len(maps); round++ {
		for i := range units {
			if decides(i) {
				run(i)
			}
		}
		if !markWrites() {
			break
		}
	}
	return results, errs, local
}

package verifier

import (
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
)

// TestUniformityImplicitFlowMutation proves that the rank-uniformity corpus
// depends on the region rule (flow.go): without it, the programs whose
// decision depends on a local branch (and on nothing local directly) are
// accepted, so TestCorpusC would fail on such a verifier.
func TestUniformityImplicitFlowMutation(t *testing.T) {
	coll, err := loader.LoadFile("../testdata/verifier/uniform.o")
	if err != nil {
		t.Fatal(err)
	}
	implicit := map[string]bool{
		"bad_channels_under_clock_branch":      true,
		"bad_decision_only_on_one_side":        true,
		"bad_return_under_local_branch":        true,
		"bad_channels_from_local_field":        true,
		"bad_algorithm_from_subprogram_branch": true,
	}
	verify := func() map[string]error {
		units := make([]Unit, 0, len(coll.Programs))
		for _, p := range coll.Programs {
			h, err := hook.ForSection(p.Section)
			if err != nil {
				t.Fatal(err)
			}
			cfg := *ForProgram(coll, p, h)
			cfg.Budget = NewBudget(0) // independent cases, each with its own budget
			units = append(units, Unit{Insns: p.Insns, Config: cfg})
		}
		_, errs, _ := VerifyTogether(coll.Maps, units)
		out := map[string]error{}
		for i, p := range coll.Programs {
			out[p.Name] = errs[i]
		}
		return out
	}
	for name, err := range verify() {
		if implicit[name] {
			if e, ok := err.(*Error); !ok || e.Code != RankDivergent || !strings.Contains(e.Msg, "a branch at") {
				t.Errorf("%s: %v, want E033 naming the branch", name, err)
			}
		}
	}
	dropRegionRule = true
	defer func() { dropRegionRule = false }()
	accepted := 0
	for name, err := range verify() {
		if implicit[name] && err == nil {
			accepted++
		}
	}
	if accepted != len(implicit) {
		t.Errorf("without the implicit-flow rule %d of %d implicit-flow programs are accepted, want all", accepted, len(implicit))
	}
}

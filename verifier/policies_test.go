package verifier_test

import (
	"path/filepath"
	"testing"

	"github.com/ncclbpf/ncclbpf/loader"
)

// TestPolicies verifies the example policies shipped in policies/ against
// the real hooks: they must all be accepted.
func TestPolicies(t *testing.T) {
	objs, _ := filepath.Glob("../policies/*.bpf.o")
	more, _ := filepath.Glob("../policies/*/*.bpf.o")
	objs = append(objs, more...)
	if len(objs) == 0 {
		t.Skip("no policies committed yet")
	}
	for _, obj := range objs {
		coll, err := loader.LoadFile(obj)
		if err != nil {
			t.Errorf("%s: %v", obj, err)
			continue
		}
		for _, p := range coll.Programs {
			cfg := configFor(t, coll, p)
			res, err := cfg.Verify(p.Insns, nil)
			if err != nil {
				t.Errorf("%s: %s: %s", filepath.Base(obj), p.Name, explain(err))
				continue
			}
			t.Logf("%s: %s (%s): %d insns, %d visits, %d states, %d warnings", filepath.Base(obj), p.Name, p.Section, len(p.Insns), res.Visits, res.States, len(res.Warnings))
		}
	}
}

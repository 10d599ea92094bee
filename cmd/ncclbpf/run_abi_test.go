package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/ncclabi/ctxfill"
)

// TestRunContextPerABI: `ncclbpf run --set abi_version=N` gives every
// field that version does not carry the value the shim gives it
// (internal/ncclabi/ctxfill), and every other field the value it has under
// the newest version.
func TestRunContextPerABI(t *testing.T) {
	for _, c := range []struct {
		obj, hook, ctx string
	}{
		{sizeAwareObj, "tuner", "ncclbpf_tuner_ctx"},
		{latencyStatsObj, "profiler/coll_end", "ncclbpf_prof_ctx"},
		{latencyStatsObj, "profiler/p2p_end", "ncclbpf_prof_ctx"},
	} {
		in, ctx := ctxfill.ForStruct(c.ctx)
		if ctx == nil {
			t.Fatalf("no description of %s", c.ctx)
		}
		run := func(v int) *jsonReport {
			return runJSON(t, c.obj, "--hook", c.hook, "--set", fmt.Sprintf("abi_version=%d", v))
		}
		ref := run(in.Newest)
		absent := 0
		for v := in.Oldest; v <= in.Newest; v++ {
			r := run(v)
			for i, f := range r.Inputs {
				if f.Name == "abi_version" || strings.Contains(f.Name, "[") {
					continue
				}
				rule, ok := ctx.Rule(f.Name, c.hook)
				if !ok {
					t.Fatalf("%s: no rule for %s", c.hook, f.Name)
				}
				src, def := rule.At(v)
				switch {
				case src == ctxfill.Absent:
					absent++
					if f.Value != def {
						t.Errorf("%s abi_version=%d: %s = %d, want %d (v%d does not carry it)", c.hook, v, f.Name, f.Value, def, v)
					}
				case f.Value != ref.Inputs[i].Value:
					t.Errorf("%s abi_version=%d: %s = %d, under v%d %d", c.hook, v, f.Name, f.Value, in.Newest, ref.Inputs[i].Value)
				}
			}
		}
		if absent == 0 {
			t.Errorf("%s: no field absent in any version: nothing checked", c.hook)
		}
	}
}

package ctxfill

import (
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
)

// TestCoversEveryContext: every hook whose context is described here is
// registered with that context, every field of the context (as generated
// from the headers) has a rule, and no rule names a field or hook the
// context lacks.
func TestCoversEveryContext(t *testing.T) {
	described := map[string]bool{}
	for _, in := range Interfaces {
		if in.Oldest < 1 || in.Newest < in.Oldest {
			t.Errorf("%s: versions %d to %d", in.Name, in.Oldest, in.Newest)
		}
		for i := range in.Contexts {
			c := &in.Contexts[i]
			hooks := map[string]bool{}
			var ctx *hook.Context
			for _, hk := range c.Hooks {
				hooks[hk.Name] = true
				described[hk.Name] = true
				h := hook.Get(hk.Name)
				if h == nil {
					t.Errorf("%s: hook %s is not registered", c.Struct, hk.Name)
					continue
				}
				if h.Context.Name != c.Struct {
					t.Errorf("hook %s: context %s, described here as %s", hk.Name, h.Context.Name, c.Struct)
				}
				if hk.Since < in.Oldest || hk.Since > in.Newest {
					t.Errorf("hook %s: since v%d, outside %s v%d..v%d", hk.Name, hk.Since, in.Name, in.Oldest, in.Newest)
				}
				ctx = &h.Context
			}
			if ctx == nil {
				t.Fatalf("%s: no registered hook", c.Struct)
			}
			have := map[string]bool{}
			for _, f := range ctx.Fields {
				have[f.Name] = true
				if _, ok := c.Rule(f.Name, ""); !ok {
					t.Errorf("%s.%s: no rule for every hook", c.Struct, f.Name)
				}
			}
			seen := map[[2]string]bool{}
			for _, r := range c.Rules {
				k := [2]string{r.Field, r.Hook}
				if seen[k] {
					t.Errorf("%s.%s: two rules for hook %q", c.Struct, r.Field, r.Hook)
				}
				seen[k] = true
				if !have[r.Field] {
					t.Errorf("%s: a rule for %s, which the header does not declare", c.Struct, r.Field)
				}
				if r.Hook != "" && !hooks[r.Hook] {
					t.Errorf("%s.%s: a rule for hook %s, which has another context", c.Struct, r.Field, r.Hook)
				}
				if r.Source < NCCL || r.Source > Output {
					t.Errorf("%s.%s: no source", c.Struct, r.Field)
				}
				if r.Since != 0 && (r.Since <= in.Oldest || r.Since > in.Newest || (r.Before != Absent && r.Before != Shim)) {
					t.Errorf("%s.%s: since v%d before %v: want a version after v%d up to v%d, and absent or shim before it",
						c.Struct, r.Field, r.Since, r.Before, in.Oldest, in.Newest)
				}
				if r.Source == Output {
					f := ctx.Field(r.Field)
					if f == nil || f.Access&hook.Write == 0 {
						t.Errorf("%s.%s: an output the header does not mark __ncclbpf_out", c.Struct, r.Field)
					}
				}
			}
			for _, f := range ctx.Fields {
				if r, _ := c.Rule(f.Name, ""); f.Access&hook.Write != 0 && r.Source != Output {
					t.Errorf("%s.%s: writable, but its rule says %v", c.Struct, f.Name, r.Source)
				}
			}
		}
	}
	for _, h := range hook.All() {
		if !described[h.Name] {
			t.Errorf("hook %s (context %s) is not described", h.Name, h.Context.Name)
		}
	}
}

func TestFill(t *testing.T) {
	for _, c := range []struct {
		st, hook, field string
		v               int
		src             Source
		def             int64
	}{
		{"ncclbpf_tuner_ctx", "tuner", "n_nvl_domains", 4, Absent, -1},
		{"ncclbpf_tuner_ctx", "tuner", "n_nvl_domains", 5, NCCL, -1},
		{"ncclbpf_tuner_ctx", "tuner", "reg_buff", 3, Absent, -1},
		{"ncclbpf_tuner_ctx", "tuner", "cost", 2, Shim, 0},
		{"ncclbpf_tuner_ctx", "tuner", "algorithm", 6, Output, -1},
		{"ncclbpf_prof_ctx", "profiler/p2p_end", "n_channels", 3, Absent, 0},
		{"ncclbpf_prof_ctx", "profiler/coll_end", "n_channels", 3, NCCL, 0},
		{"ncclbpf_prof_ctx", "profiler/coll_end", "user_tag", 6, Absent, 0},
		{"ncclbpf_prof_ctx", "profiler/p2p_end", "user_tag", 7, NCCL, 0},
		{"ncclbpf_prof_ctx", "profiler/proxy_op_end", "user_tag", 7, NCCL, 0},
		{"ncclbpf_prof_ctx", "profiler/p2p_end", "kernel_variant", 7, Absent, 0},
		{"ncclbpf_net_ctx", "net/send_end", "comm_id", 10, Absent, 0},
		{"ncclbpf_net_ctx", "net/conn", "comm_id", 11, NCCL, 0},
	} {
		src, def, err := Fill(c.st, c.hook, c.field, c.v)
		if err != nil || src != c.src || def != c.def {
			t.Errorf("Fill(%s, %s, %s, v%d) = %v %d %v; want %v %d", c.st, c.hook, c.field, c.v, src, def, err, c.src, c.def)
		}
	}
	for _, c := range []struct {
		st, field string
		v         int
		want      string
	}{
		{"ncclbpf_nothing", "x", 1, "no context"},
		{"ncclbpf_tuner_ctx", "n_bytes", 8, "version 8 is not served"},
		{"ncclbpf_net_ctx", "bytes", 7, "version 7 is not served"},
		{"ncclbpf_prof_ctx", "nothing", 5, "no field nothing"},
	} {
		if _, _, err := Fill(c.st, "", c.field, c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Fill(%s, %s, v%d): %v, want an error with %q", c.st, c.field, c.v, err, c.want)
		}
	}
}

package offline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
)

// tunerEffect must apply the host's rules of plugin/tuner.c.
func TestTunerEffect(t *testing.T) {
	r := &runTarget{hook: hook.Get(hook.Tuner)}
	if err := r.buildContext(&Options{Bytes: "64MiB", Costs: "ring/ll=na"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r0              uint64
		sets            []string
		applied         bool
		algo, proto, ch string // ch: channels as a number
		text            string
	}{
		{1, []string{"algorithm=ring", "protocol=simple"}, false, "", "", "", "the program returned 1"},
		{0, nil, false, "", "", "", "every output left to NCCL"},
		{0, []string{"algorithm=ring", "protocol=simple"}, true, "ring", "simple", "0", "NCCL runs ring/simple with its own channel count"},
		{0, []string{"algorithm=ring", "protocol=ll"}, false, "", "", "", "dropped (the chosen cell is unavailable (-1.0))"},
		{0, []string{"algorithm=ring"}, true, "ring", "simple", "0", "(the cheapest cell of the row chosen)"},
		{0, []string{"protocol=ll"}, true, "nvls", "ll", "0", "(the cheapest cell of the column chosen)"},
		{0, []string{"protocol=ll", "abi_version=2"}, false, "", "", "", "tuner v2 cannot take"},
		{0, []string{"n_channels=100"}, true, "nvls", "simple", "64", "with 64 channels (clamped from 100)"},
		{0, []string{"n_channels=-1"}, false, "", "", "", "dropped (negative channel count)"},
		{0, []string{"algorithm=9", "protocol=0"}, false, "", "", "", "dropped (algorithm/protocol outside NCCL's table)"},
	} {
		buf := append([]byte(nil), r.ctx...)
		saved := r.ctx
		r.ctx, r.set = buf, map[string]bool{}
		for _, s := range tc.sets {
			if err := r.setField(s, true); err != nil {
				t.Fatal(err)
			}
		}
		r.ctx = saved
		eff := r.tunerEffect(tc.r0, buf)
		if eff.Applied != tc.applied || !strings.Contains(eff.Text, tc.text) ||
			(tc.applied && (eff.Algorithm != tc.algo || eff.Protocol != tc.proto || fmt.Sprint(eff.Channels) != tc.ch)) {
			t.Errorf("r0 %d, %q: effect %+v; want applied %v %s/%s/%s, text with %q", tc.r0, tc.sets, eff, tc.applied,
				tc.algo, tc.proto, tc.ch, tc.text)
		}
		if !strings.Contains(eff.NCCL, "nvls/simple") {
			t.Errorf("NCCL's own choice at 64 MiB: %s", eff.NCCL)
		}
	}
}

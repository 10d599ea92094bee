package main

import (
	"strings"
	"testing"
)

// TestBuildDiagnostics: verify says how to rebuild an object built without
// -g, and which context a program should declare.
func TestBuildDiagnostics(t *testing.T) {
	const hint = "it was built without -g; rebuild it with -g: clang-19 -target bpf -mcpu=v3 -O2 -g -I include -c policy.bpf.c -o policy.bpf.o"
	for _, tc := range []struct {
		obj  string
		want string
	}{
		{"nodebug_unsafe.o", "      no source line: " + hint + "\n"},
		{"nodebug_map.o", "missing BTF: " + hint},
		{"wrong_ctx.o", "E037 wrong-context: the program's parameter is struct ncclbpf_prof_ctx *, but hook tuner passes struct ncclbpf_tuner_ctx *"},
	} {
		code, out, errs := ctlCLI("verify", "../../testdata/loader/"+tc.obj)
		if code == 0 || !strings.Contains(out+errs, tc.want) {
			t.Errorf("verify %s: exit %d\n%s%s\nwant: %s", tc.obj, code, out, errs, tc.want)
		}
	}
}

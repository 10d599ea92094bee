package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
)

// TestMainHelpNamesTheHooks: the main help names exactly the plugin slots
// that have hooks (tuner, profiler, net: the part of each hook's name
// before '/'), no more and no fewer.
func TestMainHelpNamesTheHooks(t *testing.T) {
	families := map[string]bool{}
	for _, h := range hook.All() {
		f, _, _ := strings.Cut(h.Name, "/")
		if !strings.HasPrefix(f, "zz_") { // hooks this package's tests register
			families[f] = true
		}
	}
	_, stdout, stderr := runCLI()
	help := stdout + stderr
	m := regexp.MustCompile(`plugin slots\s*\(([^)]*)\)`).FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("the main help does not list the plugin slots in parentheses:\n%s", help)
	}
	listed := map[string]bool{}
	for _, f := range strings.Split(m[1], ",") {
		listed[strings.TrimSpace(f)] = true
	}
	for f := range families {
		if !listed[f] {
			t.Errorf("hook family %q exists but the main help lists %q", f, m[1])
		}
	}
	for f := range listed {
		if !families[f] {
			t.Errorf("the main help lists %q, which has no hook", f)
		}
	}
}

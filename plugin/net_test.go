package main

import (
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
)

// TestNetReadGroups: every field of the net context belongs to a group the
// wrapper fills (net.h, NCCLBPF_NET_R_*), and the table names no other.
func TestNetReadGroups(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range hook.NetContext.Fields {
		seen[f.Name] = true
		if g, ok := netReadGroups[f.Name]; !ok || g == 0 {
			t.Errorf("net context field %s has no fill group: a program reading it would see garbage", f.Name)
		}
	}
	for name := range netReadGroups {
		if !seen[name] {
			t.Errorf("netReadGroups names %s, which the net context does not have", name)
		}
	}
}

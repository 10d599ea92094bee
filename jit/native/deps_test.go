package native

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPluginCarriesOneJIT: libncclbpf.so, loaded into every rank, links
// the JIT of its own architecture only (the other one, and the listing
// package that imports both, would add their code to every process).
func TestPluginCarriesOneJIT(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/ncclbpf/ncclbpf/plugin").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	const jit = "github.com/ncclbpf/ncclbpf/jit/"
	if Arch != "" && !deps[jit+Arch] {
		t.Errorf("the plugin does not link %s%s", jit, Arch)
	}
	for _, other := range []string{"amd64", "arm64", "listing"} {
		if other != Arch && deps[jit+other] {
			t.Errorf("the plugin links %s%s: every rank would carry it", jit, other)
		}
	}
}

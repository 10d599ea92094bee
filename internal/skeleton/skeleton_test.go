package skeleton

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The compile-and-verify test of every skeleton is in cmd/ncclbpf
// (TestNewPolicyBuildsAndVerifies); here, what the sources say.
func TestSource(t *testing.T) {
	if got := strings.Join(Hooks(), ","); got != "net,profiler,tuner" {
		t.Fatalf("Hooks() = %s", got)
	}
	for _, h := range Hooks() {
		src, err := Source("my_policy", h)
		if err != nil {
			t.Fatal(err)
		}
		s := string(src)
		if strings.Contains(s, "__NAME__") || strings.Contains(s, "__BUILD__") || !strings.Contains(s, "int my_policy(") ||
			!strings.Contains(s, BuildCommand("include", "my_policy.bpf.c", "my_policy.bpf.o")) ||
			!strings.Contains(s, "BPF_MAP_TYPE_") || strings.Contains(s, "linux/bpf.h") {
			t.Errorf("%s skeleton:\n%s", h, s)
		}
	}
	for _, bad := range []string{"", "1a", "a-b", "a b", strings.Repeat("a", 65)} {
		if _, err := Source(bad, "tuner"); err == nil || !strings.Contains(err.Error(), "C identifier") {
			t.Errorf("Source(%q) = %v, want a C identifier error", bad, err)
		}
	}
	if _, err := Source("a", "kernel"); err == nil || !strings.Contains(err.Error(), "hooks: net, profiler, tuner") {
		t.Errorf("unknown hook: %v", err)
	}
	p := filepath.Join(t.TempDir(), "sub", "a.bpf.c")
	if err := Write(p, "a", "net", false); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, "a", "net", false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second Write: %v", err)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), `SEC("net/send_end")`) {
		t.Errorf("written file:\n%s", b)
	}
}

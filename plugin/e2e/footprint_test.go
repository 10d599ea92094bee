package e2e

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/buildrecipe"
	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// footprint runs testhost/footprint.c on lib and returns its figures.
func footprint(t *testing.T, lib string, env ...string) map[string]float64 {
	t.Helper()
	bin := filepath.Join(art.dir, "footprint")
	if err := buildSteps(repoRoot(t), []buildrecipe.Step{{Target: "footprint", Out: bin}}); err != nil {
		t.Fatalf("building footprint: %v", err)
	}
	cmd := exec.Command(bin, lib)
	cmd.Env = append(cleanEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("footprint %s: %v\n%s", lib, err, out)
	}
	kv := map[string]float64{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			kv[k], _ = strconv.ParseFloat(v, 64)
		}
	}
	return kv
}

// TestFootprint: what libncclbpf.so adds to a host process, beside the
// native C plugin and the smallest Go plugin (testhost/emptygo) (BENCHMARKS.md, "Footprint"): at most 8 MB of RSS, a
// fixed number of threads that 8 threads of getCollInfo calls do not
// change. Times are logged, not asserted (a shared CI machine is not a
// quiet host).
func TestFootprint(t *testing.T) {
	artifacts(t)
	dir := t.TempDir()
	empty := filepath.Join(art.dir, "libemptygo.so")
	if err := buildSteps(repoRoot(t), []buildrecipe.Step{{Target: "emptygo", Out: empty}}); err != nil {
		t.Fatalf("building testhost/emptygo: %v", err)
	}
	n := footprint(t, art.native, "CALLS=20000")
	e := footprint(t, empty, "CALLS=20000")
	b := footprint(t, art.lib, "CALLS=20000", envconfig.ControlDir+"="+filepath.Join(dir, "ctl"))
	t.Logf("native: dlopen %.2f ms, init %.3f ms, +%.0f threads, +%.1f MB", n["dlopen_us"]/1000, n["init_us"]/1000,
		n["threads_rest"]-n["threads_before"], (n["rss_kb_rest"]-n["rss_kb_before"])/1024)
	t.Logf("empty Go library: dlopen %.2f ms, init %.3f ms, +%.0f threads, +%.1f MB", e["dlopen_us"]/1000, e["init_us"]/1000,
		e["threads_rest"]-e["threads_before"], (e["rss_kb_rest"]-e["rss_kb_before"])/1024)
	t.Logf("ncclbpf: dlopen %.2f ms, init %.2f ms, +%.0f threads at rest (%.0f after the calls), +%.1f MB",
		b["dlopen_us"]/1000, b["init_us"]/1000, b["threads_rest"]-b["threads_before"], b["threads_load"]-b["threads_before"],
		(b["rss_kb_rest"]-b["rss_kb_before"])/1024)
	if add := b["rss_kb_rest"] - b["rss_kb_before"]; add > 8*1024 {
		t.Errorf("RSS added at rest: %.1f MB, over 8 MB", add/1024)
	}
	// the Go runtime's own threads (its start thread, sysmon, the template
	// thread of cgo and the Ms of the start-up goroutines) are the floor:
	// an empty Go library adds as many (5 or 6, by scheduling)
	if b["threads_load"] != b["threads_rest"] || b["threads_rest"]-b["threads_before"] > max(6, e["threads_rest"]-e["threads_before"]) {
		t.Errorf("threads: %v before, %v at rest, %v after 8 threads of calls; want at most 6 added, none under load",
			b["threads_before"], b["threads_rest"], b["threads_load"])
	}
}

// notInPlugin are packages whose code costs NCCL's processes resident
// memory and that the plugin does without: net/http and what it brings
// (crypto/tls, crypto/x509, HTTP/2's tables; etcd is reached through
// control/http1.go), regexp (with the Unicode tables it links), math/big.
// The command line links them where it needs them.
var notInPlugin = []string{"net/http", "crypto/tls", "crypto/x509", "net/url", "mime", "regexp", "math/big"}

// TestPluginImports: no package of notInPlugin is imported by the plugin
// (math/big, which crypto/rand imports, is checked in the linked library
// instead: TestPluginLinks).
func TestPluginImports(t *testing.T) {
	c := exec.Command("go", "list", "-deps", "-tags", "ncclbpf_testing", "./plugin")
	c.Dir = repoRoot(t)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	cmd := exec.Command("go", "list", "-deps", "./plugin")
	cmd.Dir = repoRoot(t)
	prod, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, prod)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out) + " " + string(prod)) {
		deps[p] = true
	}
	if !deps["github.com/ncclbpf/ncclbpf/control"] {
		t.Fatalf("go list -deps ./plugin does not list package control: %s", prod)
	}
	for _, p := range notInPlugin {
		if p != "math/big" && deps[p] {
			t.Errorf("the plugin imports %s (go list -deps ./plugin): it costs NCCL's processes resident memory; keep it on the command line's side", p)
		}
	}
}

// TestPluginLinks: no function of notInPlugin, beside a package's init,
// is linked into libncclbpf.so.
func TestPluginLinks(t *testing.T) {
	artifacts(t)
	f, err := elf.Open(art.lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("%s: %v (the tests need a library with its symbol table)", art.lib, err)
	}
	found := map[string]string{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || strings.HasSuffix(s.Name, ".init") {
			continue // a package's (empty) init stays where the package is imported
		}
		for _, p := range notInPlugin {
			if strings.HasPrefix(s.Name, p+".") && found[p] == "" {
				found[p] = s.Name
			}
		}
	}
	if !slices.ContainsFunc(syms, func(s elf.Symbol) bool { return strings.HasPrefix(s.Name, "github.com/ncclbpf/ncclbpf/control.") }) {
		t.Fatal("no function of package control in the library's symbols: the check would see nothing")
	}
	for _, p := range notInPlugin {
		if found[p] != "" {
			t.Errorf("libncclbpf.so links %s (%s): it costs NCCL's processes resident memory", p, found[p])
		}
	}
}

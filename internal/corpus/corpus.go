// Package corpus finds the bpf_conformance corpus for the tests that run
// it. The corpus lives outside the repository: $NCCLBPF_CONFORMANCE_DIR,
// or ../shared/conformance/bpf_conformance beside the checkout. Without
// it a user's `make test` skips those tests, each with one line naming
// itself and the folder it looked in (scripts/corpus-skips.sh prints the
// lines after the run); CI (.ci/run) sets NCCLBPF_REQUIRE_CONFORMANCE=1,
// under which a missing corpus fails them, as does a
// NCCLBPF_CONFORMANCE_DIR that names no corpus.
package corpus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

// DefaultDir is where the corpus is looked for, relative to the root of
// the checkout, when NCCLBPF_CONFORMANCE_DIR is unset.
const DefaultDir = "../shared/conformance/bpf_conformance"

// SkipPrefix starts the message of every skipped corpus test.
const SkipPrefix = "SKIP (no bpf_conformance corpus)"

// Dir returns the corpus folder (it holds .data files); root is the
// checkout's root relative to the test's package. Where there is none it
// skips t, or fails it when the corpus is required.
func Dir(t testing.TB, root string) string {
	t.Helper()
	named := os.Getenv(envconfig.ConformanceDir)
	dir := named
	if dir == "" {
		dir = filepath.Join(root, filepath.FromSlash(DefaultDir))
	}
	if files, err := filepath.Glob(filepath.Join(dir, "*.data")); err == nil && len(files) > 0 {
		return dir
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // messages name the folder wherever the test ran
	}
	required, warn := envconfig.ParseSwitch(envconfig.RequireConformance, os.Getenv(envconfig.RequireConformance))
	if warn != "" {
		required = true // a value that is not understood: fail rather than skip silently
	}
	switch {
	case required:
		t.Fatalf("CONFORMANCE CORPUS MISSING: no .data files in %s, and %s=%s requires them. "+
			"Point %s at the bpf_conformance tests folder.", dir, envconfig.RequireConformance,
			os.Getenv(envconfig.RequireConformance), envconfig.ConformanceDir)
		return ""
	case named != "":
		t.Fatalf("CONFORMANCE CORPUS MISSING: %s=%s holds no .data files", envconfig.ConformanceDir, named)
		return ""
	}
	t.Skipf("%s %s: nothing at %s; set %s to run it", SkipPrefix, t.Name(), dir, envconfig.ConformanceDir)
	return ""
}

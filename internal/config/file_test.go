package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/internal/badfiles"
)

// A rules file that is not a regular file, or is over the limit, is refused
// without being read.
func TestParseRulesFileRefusesOddFiles(t *testing.T) {
	dir := t.TempDir()
	for kind, path := range badfiles.Make(t, dir) {
		t0 := time.Now()
		_, err := ParseRulesFile(path)
		if err == nil || (!errors.Is(err, ErrNotRegular) && !strings.Contains(err.Error(), "over the limit")) {
			t.Errorf("%s: %v", kind, err)
		}
		if d := time.Since(t0); d > 100*time.Millisecond {
			t.Errorf("%s: refused after %v", kind, d)
		}
	}
}

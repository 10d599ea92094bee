package ctl

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
)

func TestSeqFrom(t *testing.T) {
	for _, tc := range []struct {
		s    string
		hi   uint64
		want uint64
		bad  bool
	}{
		{"250000", 7, 250000, false},
		{"+64", 1000, 1064, false},
		{"+0", 5, 5, false},
		{"-3", 0, 0, true},
		{"+x", 0, 0, true},
		{"+" + strings.Repeat("9", 12), 0, 0, true}, // beyond control.MaxSeqAhead
	} {
		n, err := seqFrom(tc.s, tc.hi)
		var ue *cli.UsageError
		if tc.bad != (err != nil) || (err != nil && !errors.As(err, &ue)) || (!tc.bad && n != tc.want) {
			t.Errorf("seqFrom(%q, %d) = %d, %v; want %d (error: %v, a usage error)", tc.s, tc.hi, n, err, tc.want, tc.bad)
		}
	}
	if control.MaxSeqAhead >= 999999999999 {
		t.Fatalf("the test's far +K is no longer beyond MaxSeqAhead %d", uint64(control.MaxSeqAhead))
	}
}

func TestEnvDiffers(t *testing.T) {
	if s := envDiffers([]string{"pid 1", "pid 2"}, []uint64{7, 7}); s != "" {
		t.Errorf("same environment: %q", s)
	}
	s := envDiffers([]string{"pid 1", "pid 2", "pid 3"}, []uint64{7, 0, 7})
	if want := "pid 1, pid 3 (environment 0000000000000007); pid 2 (no env plugin)"; s != want {
		t.Errorf("envDiffers = %q, want %q", s, want)
	}
}

func TestParseCommID(t *testing.T) {
	if v, err := parseCommID("0x5E5E"); err != nil || v != 0x5e5e {
		t.Errorf("parseCommID(0x5E5E) = %#x, %v", v, err)
	}
	var ue *cli.UsageError
	if _, err := parseCommID("zz"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--comm") {
		t.Errorf("parseCommID(zz): %v, want a usage error about --comm", err)
	}
}

// A control directory that does not exist is named, with where the
// processes' directory is, and nothing is printed as if it were empty.
func TestPSMissingDirectory(t *testing.T) {
	var out, errs bytes.Buffer
	dir := filepath.Join(t.TempDir(), "none")
	err := PS(cli.Streams{Stdout: &out, Stderr: &errs}, nil, dir, false, false, time.Second)
	if err == nil || !strings.Contains(err.Error(), dir+" does not exist") || !strings.Contains(err.Error(), "--dir") || out.Len() != 0 {
		t.Errorf("PS on a missing directory: %v, stdout %q", err, out.String())
	}
}

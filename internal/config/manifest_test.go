package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte("# rollout 7\nat_seq = 250000\ncomm.0x7F3A = 260000 # the big one\ntimeout=10m\n"))
	if err != nil || m.AtSeq != 250000 || len(m.CommAt) != 1 || m.CommAt[0x7f3a] != 260000 || m.Timeout != "10m" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{
		"", "comm.0x1 = 5\n", "at_seq = +100\n", "at_seq = -1\n", "at_seq 5\n", "at_seq = 1\nfoo = 2\n",
		"at_seq = 1\ncomm.zz = 2\n", "at_seq = 1\ncomm.1 = 2\ncomm.0x1 = 3\n",
	} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := ParseManifest([]byte("at_seq = 1\nbogus\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error without its line: %v", err)
	}
}

func TestReadManifest(t *testing.T) {
	dir := t.TempDir()
	obj := filepath.Join(dir, "p.bpf.o")
	if _, err := ReadManifest(obj); !errors.Is(err, ErrNoManifest) {
		t.Fatalf("missing manifest: %v", err)
	}
	os.WriteFile(obj+".activate", []byte("at_seq=12\n"), 0o644)
	if m, err := ReadManifest(obj); err != nil || m.AtSeq != 12 {
		t.Fatalf("%+v %v", m, err)
	}
	os.WriteFile(obj+".activate", []byte("at_seq=x\n"), 0o644)
	if _, err := ReadManifest(obj); err == nil || !strings.Contains(err.Error(), "p.bpf.o.activate") {
		t.Fatalf("bad manifest: %v", err)
	}
}

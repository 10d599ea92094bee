//go:build linux

package kernelbpf

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ncclbpf/ncclbpf/internal/envconfig"
)

func TestLastLine(t *testing.T) {
	for _, c := range []struct{ log, want string }{
		{"", "(no log)"},
		{"0: (b7) r0 = 0\nR0 !read_ok\nprocessed 2 insns (limit 1000000)\n\x00", "R0 !read_ok"},
		{"\n\n  why  \n", "why"},
	} {
		if got := LastLine(c.log); got != c.want {
			t.Errorf("LastLine(%q) = %q, want %q", c.log, got, c.want)
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := ProgLoad(ProgTypeSocketFilter, "x", make([]byte, 12)); err == nil || !strings.Contains(err.Error(), "multiple of 8") {
		t.Errorf("12 bytes of instructions: err = %v, want a size error", err)
	}
	if err := MapUpdate(0, nil, []byte{1}); err == nil {
		t.Error("MapUpdate with an empty key succeeded")
	}
}

// TestLoadRefusedWithLog loads "exit" without setting r0: the kernel must
// refuse it and the error must carry the verifier's reason from the log.
func TestLoadRefusedWithLog(t *testing.T) {
	if err := Available(); err != nil {
		if os.Getenv(envconfig.KernelVerifier) == "require" {
			t.Fatal(err)
		}
		t.Skipf("environment limit: %v", err)
	}
	fd, err := ProgLoad(ProgTypeSocketFilter, "noret", []byte{0x95, 0, 0, 0, 0, 0, 0, 0})
	if err == nil {
		unix.Close(fd)
		t.Fatal("the kernel accepted a program that returns an unset r0")
	}
	var le *LoadError
	if !errors.As(err, &le) || le.Errno != unix.EACCES || !strings.Contains(LastLine(le.Log), "R0") {
		t.Fatalf("err = %v, want EACCES with a log naming R0", err)
	}
	m, err := MapCreate(unix.BPF_MAP_TYPE_ARRAY, 4, 8, 1, MapFlagReadOnlyProg)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(m)
	if err := MapUpdate(m, make([]byte, 4), []byte("12345678")); err != nil {
		t.Fatal(err)
	}
	if err := MapFreeze(m); err != nil {
		t.Fatal(err)
	}
	if err := MapUpdate(m, make([]byte, 4), []byte("12345678")); err == nil {
		t.Error("a frozen map accepted an update")
	}
	err = WithoutPerfmon(func() error {
		if err := privileged(); err == nil {
			return errors.New("CAP_PERFMON or CAP_SYS_ADMIN still effective")
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrCapabilities) {
		t.Error(err)
	}
	if err := privileged(); err != nil {
		t.Errorf("after WithoutPerfmon: %v", err)
	}
}

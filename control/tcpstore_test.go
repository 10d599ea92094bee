package control

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/internal/pytorchstore"
)

// startTCPStoreServer returns the address of a real PyTorch TCPStore
// server, started once for the package's tests (PyTorch takes seconds to
// import; each test keeps to keys of its own); the test skips, with one
// line, only when no Python with PyTorch is installed (scripts/setup.sh
// installs python3-torch).
func startTCPStoreServer(t testing.TB) string {
	t.Helper()
	tcpStoreOnce.Do(func() { tcpStoreAddr, tcpStoreErr = launchTCPStoreServer(t) })
	if tcpStoreErr == errNoTorch {
		t.Skip("no python3 with PyTorch (Debian: apt-get install python3-torch; scripts/setup.sh does)")
	}
	if tcpStoreErr != nil {
		t.Fatalf("tcpstore server: %v", tcpStoreErr)
	}
	return tcpStoreAddr
}

var (
	tcpStoreOnce sync.Once
	tcpStoreAddr string
	tcpStoreErr  error
	tcpStoreStop func()
	errNoTorch   = errors.New("no python3 with PyTorch")
)

// launchTCPStoreServer starts the server (package storetest).
func launchTCPStoreServer(t testing.TB) (string, error) {
	addr, stop, err := pytorchstore.LaunchTCPStore(repoDir(t))
	if errors.Is(err, pytorchstore.ErrNoTorch) {
		return "", errNoTorch
	}
	tcpStoreStop = stop
	return addr, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tcpStoreStop != nil {
		tcpStoreStop()
	}
	os.Exit(code)
}

func repoDir(t testing.TB) string {
	wd, _ := os.Getwd()
	for d := wd; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	t.Fatal("no go.mod above " + wd)
	return ""
}

// TestTCPStoreClientAgainstPyTorch: every call of the Go client against a
// real PyTorch TCPStore server: the protocol generation is found, a key
// Python set is read, set/get/add/compare-set/check/delete behave as the
// store defines them, and a wait returns when another client sets the key
// and times out (ErrStoreTimeout) when none does.
func TestTCPStoreClientAgainstPyTorch(t *testing.T) {
	addr := startTCPStoreServer(t)
	s, err := DialTCPStore(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("protocol generation %d", s.Generation())
	v, ok, err := s.Get("python-set")
	if err != nil || !ok || string(v) != "from python" {
		t.Fatalf("get python-set: %q %v %v", v, ok, err)
	}
	if _, ok, err := s.Get("missing"); err != nil || ok {
		t.Fatalf("get missing: %v %v", ok, err)
	}
	if err := s.Set("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Add("n", 3); err != nil || n != 3 {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := s.Add("n", -1); err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	if cur, err := s.CompareSet("a", []byte("1"), []byte("2")); err != nil || string(cur) != "2" {
		t.Fatalf("compare-set that matches: %q %v", cur, err)
	}
	if cur, err := s.CompareSet("a", []byte("1"), []byte("3")); err != nil || string(cur) != "2" {
		t.Fatalf("compare-set that does not match: %q %v", cur, err)
	}
	if ok, err := s.Check("a", "n"); err != nil || !ok {
		t.Fatalf("check: %v %v", ok, err)
	}
	if ok, err := s.Delete("a"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := s.Check("a"); err != nil || ok {
		t.Fatalf("check after delete: %v %v", ok, err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		o, err := DialTCPStore(addr, 5*time.Second)
		if err == nil {
			o.Set("later", []byte("x"))
			o.Close()
		}
	}()
	if err := s.Wait(5*time.Second, "later"); err != nil {
		t.Fatalf("wait: %v", err)
	}
	t0 := time.Now()
	if err := s.Wait(200*time.Millisecond, "never"); !errors.Is(err, ErrStoreTimeout) || time.Since(t0) > 2*time.Second {
		t.Fatalf("wait for a key nobody sets: %v after %v", err, time.Since(t0))
	}
	// The connection still works after the timed-out wait.
	if v, ok, err := s.Get("later"); err != nil || !ok || string(v) != "x" {
		t.Fatalf("get after a timed-out wait: %q %v %v", v, ok, err)
	}
}

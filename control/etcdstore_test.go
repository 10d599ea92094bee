package control

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts a real etcd server (Debian's etcd-server) with its data
// in a temporary directory and returns its client address; the test skips,
// with one line, only when the binary is missing (scripts/setup.sh installs
// it).
func startEtcd(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd binary (Debian: apt-get install etcd-server; scripts/setup.sh does)")
	}
	client := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "--data-dir", filepath.Join(t.TempDir(), "etcd"), "--name", "test",
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test="+peer, "--log-level", "error")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s, err := DialEtcdHTTP(client, 500*time.Millisecond)
		if err == nil {
			s.Close()
			return client
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not answer at %s: %v\n%s", client, err, out.String())
		}
	}
}

// storeSemantics checks what the control plane needs of a store.
func storeSemantics(t *testing.T, s, other Store) {
	if _, ok, err := s.Get("sem/missing"); err != nil || ok {
		t.Fatalf("get missing: %v %v", ok, err)
	}
	if err := s.Set("sem/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get("sem/a"); err != nil || !ok || string(v) != "1" {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}
	if n, err := s.Add("sem/n", 3); err != nil || n != 3 {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := s.Add("sem/n", -1); err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := s.Add("sem/n", 0); err != nil || n != 2 {
		t.Fatalf("add 0: %d %v", n, err)
	}
	if cur, err := s.CompareSet("sem/tx", nil, []byte("commit")); err != nil || string(cur) != "commit" {
		t.Fatalf("compare-set of a missing key: %q %v", cur, err)
	}
	if cur, err := s.CompareSet("sem/tx", nil, []byte("abort")); err != nil || string(cur) != "commit" {
		t.Fatalf("compare-set of a key already set: %q %v (the first decision must stand)", cur, err)
	}
	if cur, err := s.CompareSet("sem/a", []byte("1"), []byte("2")); err != nil || string(cur) != "2" {
		t.Fatalf("compare-set that matches: %q %v", cur, err)
	}
	if ok, err := s.Delete("sem/a"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := s.Delete("sem/a"); err != nil || ok {
		t.Fatalf("delete again: %v %v", ok, err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		other.Set("sem/later", []byte("x"))
	}()
	if err := s.Wait(5*time.Second, "sem/later"); err != nil {
		t.Fatalf("wait: %v", err)
	}
	t0 := time.Now()
	if err := s.Wait(200*time.Millisecond, "sem/never"); !errors.Is(err, ErrStoreTimeout) || time.Since(t0) > 2*time.Second {
		t.Fatalf("wait for a key nobody sets: %v after %v", err, time.Since(t0))
	}
	// Concurrent adds from two clients: none lost.
	done := make(chan error, 2)
	for _, c := range []Store{s, other} {
		go func() {
			for i := 0; i < 50; i++ {
				if _, err := c.Add("sem/race", 1); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.Add("sem/race", 0); n != 100 {
		t.Fatalf("100 concurrent adds gave %d", n)
	}
}

// TestEtcdHTTPAgainstEtcd: every call of the plugin's etcd store (the
// JSON gateway) against a real etcd; a registration lives on the process's lease and is gone once the
// lease is (the client closed, as a finished process's is); a store that
// is down is an error at once.
func TestEtcdHTTPAgainstEtcd(t *testing.T) {
	addr := startEtcd(t)
	s, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	storeSemantics(t, s, o)

	env := func(k string) string { return map[string]string{"RANK": "0", "WORLD_SIZE": "2"}[k] }
	p, err := DialEtcdHTTP(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Register(p, "ncclbpf/lease/", env); err != nil {
		t.Fatal(err)
	}
	env1 := func(k string) string { return map[string]string{"RANK": "1", "WORLD_SIZE": "2"}[k] }
	if _, err := Register(o, "ncclbpf/lease/", env1); err != nil {
		t.Fatal(err)
	}
	if rs, err := StoreRanks(s, "ncclbpf/lease/", 0); err != nil || len(rs) != 2 {
		t.Fatalf("two live registrations: %v %v", rs, err)
	}
	p.Close() // the process finished
	_, err = StoreRanks(s, "ncclbpf/lease/", 0)
	if err == nil || !strings.Contains(err.Error(), "rank 0: not registered") {
		t.Fatalf("after rank 0 finished: %v; want rank 0 named missing", err)
	}

	if _, err := DialEtcdHTTP(fmt.Sprintf("127.0.0.1:%d", freePort(t)), 300*time.Millisecond); err == nil {
		t.Fatal("no error from a store that is down")
	}
}

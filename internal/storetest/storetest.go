// Package storetest starts the job stores the tests run against.
package storetest

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncclbpf/ncclbpf/control"
)

// StartEtcd starts a real etcd server (Debian's etcd-server) with its data
// in a temporary directory and returns its client address; the test skips,
// with one line, only when the binary is missing (scripts/setup.sh
// installs it).
func StartEtcd(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd binary (Debian: apt-get install etcd-server; scripts/setup.sh does)")
	}
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	client := fmt.Sprintf("127.0.0.1:%d", port())
	peer := fmt.Sprintf("http://127.0.0.1:%d", port())
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
		if s, err := control.DialEtcdHTTP(client, 500*time.Millisecond); err == nil {
			s.Close()
			return client
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not answer at %s\n%s", client, out.String())
		}
	}
}

package control

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A live owner's socket is never removed, even while it refuses
// connections (bound, not yet listening); a socket whose lock is free is.
// (Mutation: treating a refused connection as proof of death, as before,
// deletes the first socket here.)
func TestRemoveStaleKeepsLiveOwners(t *testing.T) {
	dir := t.TempDir()
	// A live owner that has bound but not listened: its lock is held.
	lock, err := lockFile(filepath.Join(dir, "4242.lock"), true)
	if err != nil || lock == nil {
		t.Fatalf("lock: %v", err)
	}
	defer lock.Close()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	live := filepath.Join(dir, "4242.sock")
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: live}); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("unix", live, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a bound socket that does not listen: dial gave %v, want ECONNREFUSED", err)
	}
	// A dead owner: socket and lock file, nobody holds the lock.
	dead := filepath.Join(dir, "4243.sock")
	fd2, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err := syscall.Bind(fd2, &syscall.SockaddrUnix{Name: dead}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd2)
	os.WriteFile(filepath.Join(dir, "4243.lock"), nil, 0o600)
	removed, err := RemoveStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != "4243" {
		t.Fatalf("removed %v, want [4243]", removed)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Fatalf("the live owner's socket was removed: %v", err)
	}
	for _, p := range []string{dead, filepath.Join(dir, "4243.lock")} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s left behind", p)
		}
	}
}

// Two PID namespaces sharing a directory: the second "PID 1" gets a name
// of its own instead of failing (or taking the first one's socket).
func TestListenPIDTakenInAnotherNamespace(t *testing.T) {
	dir := t.TempDir()
	const pid = 1
	other, err := lockFile(filepath.Join(dir, "1.lock"), true) // the other namespace's live PID 1
	if err != nil || other == nil {
		t.Fatalf("lock: %v", err)
	}
	defer other.Close()
	s, err := Listen(dir, pid, echoHandler)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	defer s.Close()
	want := "1-" + nsTag() + ".sock"
	if filepath.Base(s.Path()) != want {
		t.Fatalf("socket %s, want %s", s.Path(), want)
	}
	es, err := Scan(dir)
	if err != nil || len(es) != 1 || es[0].PID != 1 || es[0].Name != strings.TrimSuffix(want, ".sock") {
		t.Fatalf("scan: %+v %v", es, err)
	}
	c, err := Dial(es[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(&InfoQuery{}); err != nil {
		t.Fatal(err)
	}
	if p, err := NamePath(dir, es[0].Name); err != nil || p != es[0].Path {
		t.Fatalf("NamePath: %s %v", p, err)
	}
}

// A directory whose socket paths would not fit a sockaddr_un: a clear
// error naming the limit and the fix, not "bind: invalid argument".
func TestListenPathTooLong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 110))
	_, err := Listen(dir, os.Getpid(), echoHandler)
	if err == nil || !strings.Contains(err.Error(), "over the 107") || !strings.Contains(err.Error(), EnvDir) {
		t.Fatalf("err = %v", err)
	}
}

// Listen publishes the socket only once it listens, and Close removes the
// socket and its lock file.
func TestListenRenameAndClose(t *testing.T) {
	dir := t.TempDir()
	s, err := Listen(dir, os.Getpid(), echoHandler)
	if err != nil {
		t.Fatal(err)
	}
	name := strconv.Itoa(os.Getpid())
	for _, f := range []string{name + ".sock", name + ".lock"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "."+name+".tmp")); err == nil {
		t.Fatal("temporary socket left")
	}
	// A second server for the same pid (the lock is held) gets the other name form.
	s2, err := Listen(dir, os.Getpid(), echoHandler)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s2.Path(), "-ns") {
		t.Fatalf("second server's socket %s", s2.Path())
	}
	s2.Close()
	s.Close()
	des, _ := os.ReadDir(dir)
	if len(des) != 0 {
		t.Fatalf("left after Close: %v", des)
	}
}

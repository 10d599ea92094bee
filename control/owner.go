package control

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Ownership of a socket name. Every server holds an exclusive flock(2) on
// NAME.lock, beside NAME.sock, for as long as it serves; the kernel drops
// the lock when the owner's last descriptor of it is closed, at exit or
// crash included. A socket is stale, and may be deleted, only when its lock
// can be taken: a sibling that has bound but not yet listened still holds
// its lock, so start-up races never delete a live socket. The lock file is
// opened close-on-exec and the shim closes it in forked children
// (plugin/fork.c), so that a child that outlives its parent does not keep
// the parent's name alive.
//
// The socket itself is bound under a temporary name (.NAME.tmp, covered by
// the same lock) and renamed into place once it listens: a NAME.sock that
// exists always accepts connections while its owner lives.

// maxSocketPath is the longest socket path the kernel accepts
// (sizeof(sun_path) - 1).
const maxSocketPath = 107

// nsTag identifies the PID namespace of this process ("ns4026531836"), for
// the socket names of processes whose pid is taken in the directory by a
// live process of another namespace (containers sharing a directory both
// have a "PID 1").
func nsTag() string {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "ns0"
	}
	// "pid:[4026531836]"
	l = strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]")
	if _, err := strconv.ParseUint(l, 10, 64); err != nil {
		return "ns0"
	}
	return "ns" + l
}

// lockFile takes the lock at path without waiting. It returns the open,
// locked file, or nil when another live process holds the lock. The lock
// is taken on the file the path names when it returns (a cleaner may
// unlink a lock file between our open and our flock; we then retry).
func lockFile(path string, create bool) (*os.File, error) {
	flags := os.O_RDWR | syscall.O_NOFOLLOW
	if create {
		flags |= os.O_CREATE
	}
	for try := 0; try < 8; try++ {
		f, err := os.OpenFile(path, flags, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		var a, b syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &a) == nil && syscall.Lstat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino {
			return f, nil
		}
		f.Close()
		if !create {
			return nil, os.ErrNotExist
		}
	}
	return nil, fmt.Errorf("lock %s: the file keeps being replaced", path)
}

// claim takes a socket name for process pid in dir: "PID", or, when a live
// process of another PID namespace holds that name, "PID-nsINODE". It
// returns the name and its locked lock file.
func claim(dir string, pid int) (string, *os.File, error) {
	names := []string{strconv.Itoa(pid), strconv.Itoa(pid) + "-" + nsTag()}
	for _, name := range names {
		f, err := lockFile(filepath.Join(dir, name+".lock"), true)
		if err != nil {
			return "", nil, fmt.Errorf("control socket %s: %w", filepath.Join(dir, name+".sock"), err)
		}
		if f != nil {
			return name, f, nil
		}
	}
	return "", nil, fmt.Errorf("control socket %s: held by a live process (pid %d of this and of another PID namespace both serve in this directory)",
		filepath.Join(dir, names[1]+".sock"), pid)
}

// pidAlive says whether pid names a process of this PID namespace
// (kill(pid, 0): EPERM means it exists under another user).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RemoveStale deletes the sockets (and temporary sockets and lock files) of
// dir whose owners are provably gone: their lock can be taken. A socket
// without a lock file (an older library) is deleted only when its name is
// a bare pid of this PID namespace that no process has. Sockets of live
// owners are never touched, whether or not they accept connections yet.
// It returns the names removed.
func RemoveStale(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	names := map[string]bool{}
	for _, de := range des {
		n := de.Name()
		switch {
		case strings.HasSuffix(n, ".lock"):
			names[strings.TrimSuffix(n, ".lock")] = true
		case strings.HasSuffix(n, ".sock") && de.Type()&os.ModeSocket != 0:
			names[strings.TrimSuffix(n, ".sock")] = true
		case strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp") && de.Type()&os.ModeSocket != 0:
			names[strings.TrimSuffix(strings.TrimPrefix(n, "."), ".tmp")] = true
		}
	}
	var removed []string
	for name := range names {
		if _, ok := parseName(name); !ok {
			continue
		}
		if removeIfStale(dir, name) {
			removed = append(removed, name)
		}
	}
	return removed, nil
}

func removeIfStale(dir, name string) bool {
	sock := filepath.Join(dir, name+".sock")
	tmp := filepath.Join(dir, "."+name+".tmp")
	lockPath := filepath.Join(dir, name+".lock")
	f, err := lockFile(lockPath, false)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// No lock file: a socket of an older library. Only a bare pid of
		// this namespace with no process is provably gone.
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 || pidAlive(pid) {
			return false
		}
		os.Remove(sock)
		os.Remove(tmp)
		return true
	case err != nil, f == nil:
		return false // held: the owner lives
	}
	// We hold the lock: nobody owns the name. Remove the sockets first, the
	// lock file last (while holding it), so that a new owner starts clean.
	os.Remove(sock)
	os.Remove(tmp)
	os.Remove(lockPath)
	f.Close()
	return true
}

// parseName reads the pid of a socket name ("1234" or "1234-ns4026531836").
func parseName(name string) (int, bool) {
	p, ns, hasNS := strings.Cut(name, "-")
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != p {
		return 0, false
	}
	if hasNS {
		rest, ok := strings.CutPrefix(ns, "ns")
		if !ok {
			return 0, false
		}
		if _, err := strconv.ParseUint(rest, 10, 64); err != nil {
			return 0, false
		}
	}
	return pid, true
}

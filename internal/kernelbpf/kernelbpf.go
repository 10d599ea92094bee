//go:build linux

// Package kernelbpf makes the few bpf(2) calls that hand a program to the
// running kernel's eBPF verifier: create a map, fill and freeze it, load a
// program with a verifier log. It exists for tests that compare ncclbpf's
// verifier with Linux's; the product never loads programs into the kernel.
//
// Programs are only loaded (BPF_PROG_LOAD), never attached or run: the
// file descriptor a successful load returns is closed by the caller.
package kernelbpf

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Map and program types, flags and commands used here (Linux's uapi
// numbering).
const (
	ProgTypeSocketFilter = unix.BPF_PROG_TYPE_SOCKET_FILTER
	ProgTypeKprobe       = unix.BPF_PROG_TYPE_KPROBE
	MapFlagReadOnlyProg  = unix.BPF_F_RDONLY_PROG
	MapFlagWriteOnlyProg = unix.BPF_F_WRONLY_PROG
)

// mapCreateAttr is the BPF_MAP_CREATE part of union bpf_attr, up to
// map_flags; the kernel reads the fields past the size given as zero.
type mapCreateAttr struct {
	mapType    uint32
	keySize    uint32
	valueSize  uint32
	maxEntries uint32
	mapFlags   uint32
}

// mapElemAttr is the BPF_MAP_UPDATE_ELEM part of union bpf_attr.
type mapElemAttr struct {
	mapFD uint32
	_     uint32
	key   uint64
	value uint64
	flags uint64
}

// mapFreezeAttr is the BPF_MAP_FREEZE part of union bpf_attr.
type mapFreezeAttr struct {
	mapFD uint32
}

// progLoadAttr is the BPF_PROG_LOAD part of union bpf_attr, up to
// prog_name.
type progLoadAttr struct {
	progType    uint32
	insnCnt     uint32
	insns       uint64
	license     uint64
	logLevel    uint32
	logSize     uint32
	logBuf      uint64
	kernVersion uint32
	progFlags   uint32
	progName    [unix.BPF_OBJ_NAME_LEN]byte
}

// bpf makes one bpf(2) call with attr, retrying on EINTR and EAGAIN (the
// verifier returns EAGAIN when a signal interrupts it).
func bpf(cmd uintptr, attr unsafe.Pointer, size uintptr) (int, error) {
	for {
		r, _, errno := unix.Syscall(unix.SYS_BPF, cmd, uintptr(attr), size)
		if errno == unix.EINTR || errno == unix.EAGAIN {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
	}
}

// MapCreate creates a map and returns its file descriptor.
func MapCreate(mapType, keySize, valueSize, maxEntries, flags uint32) (int, error) {
	attr := mapCreateAttr{mapType, keySize, valueSize, maxEntries, flags}
	fd, err := bpf(unix.BPF_MAP_CREATE, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err != nil {
		return -1, fmt.Errorf("kernelbpf: BPF_MAP_CREATE type %d key %d value %d entries %d flags %#x: %w",
			mapType, keySize, valueSize, maxEntries, flags, err)
	}
	return fd, nil
}

// MapUpdate sets the value of key in the map fd (BPF_ANY).
func MapUpdate(fd int, key, value []byte) error {
	if len(key) == 0 || len(value) == 0 {
		return fmt.Errorf("kernelbpf: BPF_MAP_UPDATE_ELEM on fd %d: empty key or value", fd)
	}
	attr := mapElemAttr{mapFD: uint32(fd), key: uint64(uintptr(unsafe.Pointer(&key[0]))), value: uint64(uintptr(unsafe.Pointer(&value[0])))}
	_, err := bpf(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	if err != nil {
		return fmt.Errorf("kernelbpf: BPF_MAP_UPDATE_ELEM on fd %d: %w", fd, err)
	}
	return nil
}

// MapFreeze makes the map fd read-only for system calls, so that the
// verifier may take the contents of a BPF_F_RDONLY_PROG map as constants.
func MapFreeze(fd int) error {
	attr := mapFreezeAttr{mapFD: uint32(fd)}
	if _, err := bpf(unix.BPF_MAP_FREEZE, unsafe.Pointer(&attr), unsafe.Sizeof(attr)); err != nil {
		return fmt.Errorf("kernelbpf: BPF_MAP_FREEZE on fd %d: %w", fd, err)
	}
	return nil
}

// LoadError is a program the kernel refused: Errno is what bpf(2)
// returned, Log the verifier's log (it may be empty when the refusal
// comes before verification).
type LoadError struct {
	Errno unix.Errno
	Log   string
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("kernel verifier: BPF_PROG_LOAD: %v: %s", e.Errno, LastLine(e.Log))
}

// Unwrap returns the errno.
func (e *LoadError) Unwrap() error { return e.Errno }

// LastLine returns the last non-empty line of a verifier log, where the
// kernel states why it refused a program; "(no log)" for an empty log.
func LastLine(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n\x00"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "processed ") {
			return l
		}
	}
	return "(no log)"
}

// logSize is the verifier log buffer for a refused program: the kernel
// keeps the end of the log when it does not fit, and the end says why.
const logSize = 256 << 10

// ProgLoad hands insns (the encoded instruction slots) to the kernel's
// verifier as a program of progType with license GPL. It returns the
// program's file descriptor, which the caller closes, or a *LoadError.
// A program is first loaded without a log; a refused one is loaded again
// with a log to learn why.
func ProgLoad(progType uint32, name string, insns []byte) (int, error) {
	if len(insns) == 0 || len(insns)%8 != 0 {
		return -1, fmt.Errorf("kernelbpf: BPF_PROG_LOAD %q: %d bytes of instructions is not a positive multiple of 8", name, len(insns))
	}
	license := []byte("GPL\x00")
	attr := progLoadAttr{
		progType: progType,
		insnCnt:  uint32(len(insns) / 8),
		insns:    uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&license[0]))),
	}
	copy(attr.progName[:unix.BPF_OBJ_NAME_LEN-1], sanitizeName(name))
	fd, err := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err == nil {
		runtime.KeepAlive(insns)
		runtime.KeepAlive(license)
		return fd, nil
	}
	first := err.(unix.Errno)
	buf := make([]byte, logSize)
	attr.logLevel = 1
	attr.logSize = uint32(len(buf))
	attr.logBuf = uint64(uintptr(unsafe.Pointer(&buf[0])))
	fd, err = bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	runtime.KeepAlive(buf)
	if err == nil {
		// refused without a log, accepted with one: report the first
		// verdict, which is what a loader without a log would see
		unix.Close(fd)
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return -1, &LoadError{Errno: first, Log: string(buf[:n])}
}

// sanitizeName keeps the characters the kernel allows in a program name.
func sanitizeName(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Capabilities that decide which rules the kernel's verifier applies.
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// privileged checks that this thread holds what a privileged loader
// holds: CAP_BPF (bounded loops, ring buffers, BPF-to-BPF calls) and
// CAP_PERFMON (bpf_trace_printk, pointer comparisons), or CAP_SYS_ADMIN
// for both. Without them Linux verifies under its unprivileged rules,
// which are another comparison.
func privileged() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(capSysAdmin) || has(capBPF) && has(capPerfmon) {
		return nil
	}
	return errors.New("neither CAP_SYS_ADMIN nor both CAP_BPF and CAP_PERFMON are effective, so Linux would verify under its unprivileged rules")
}

// Available reports why programs cannot be handed to the kernel's
// verifier here under the privileged rules, or nil when they can: it
// checks the capabilities, loads "r0 = 0; exit" as a socket filter and
// closes it. The error names the environment's limit (not root, missing
// capabilities, bpf(2) not permitted or not built in).
func Available() error {
	prog := []byte{
		0xb7, 0x00, 0, 0, 0, 0, 0, 0, // mov r0, 0
		0x95, 0x00, 0, 0, 0, 0, 0, 0, // exit
	}
	who := "this process"
	if os.Geteuid() != 0 {
		who = fmt.Sprintf("uid %d (not root)", os.Geteuid())
	}
	if err := privileged(); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	fd, err := ProgLoad(ProgTypeSocketFilter, "probe", prog)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	var le *LoadError
	switch {
	case errors.As(err, &le) && (le.Errno == unix.EPERM || le.Errno == unix.EACCES):
		return fmt.Errorf("bpf(BPF_PROG_LOAD) is not permitted to %s: %v", who, le.Errno)
	case errors.As(err, &le) && le.Errno == unix.ENOSYS:
		return fmt.Errorf("bpf(2) is not available in this kernel or sandbox: %v", le.Errno)
	}
	return fmt.Errorf("loading a two-instruction socket filter failed: %w", err)
}

// ErrCapabilities wraps the errors of WithoutPerfmon that come from the
// environment (capabilities it cannot read or drop), not from f.
var ErrCapabilities = errors.New("kernelbpf: capabilities")

// WithoutPerfmon runs f on one OS thread whose effective capabilities
// lack CAP_PERFMON and CAP_SYS_ADMIN but keep CAP_BPF: loads made by f
// meet Linux's rules for a loader that may use BPF but not read kernel
// memory (no pointer leaks, no uninitialized stack reads, Spectre v1
// checks on pointer arithmetic, no bpf_trace_printk, no perf program
// types such as kprobes). Capabilities are per thread in Linux, so the
// rest of the process keeps its own; the thread gets them back after f,
// and is ended with its goroutine if it cannot.
func WithoutPerfmon(f func() error) error {
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var saved [2]unix.CapUserData
		if err := unix.Capget(&hdr, &saved[0]); err != nil {
			done <- result{fmt.Errorf("%w: capget: %v", ErrCapabilities, err)}
			return // the thread stays locked and ends with the goroutine
		}
		if saved[capBPF/32].Effective&(1<<(capBPF%32)) == 0 {
			done <- result{fmt.Errorf("%w: CAP_BPF is not effective, so the rules of a loader holding CAP_BPF alone cannot be asked for", ErrCapabilities)}
			return
		}
		reduced := saved
		reduced[capPerfmon/32].Effective &^= 1 << (capPerfmon % 32)
		reduced[capSysAdmin/32].Effective &^= 1 << (capSysAdmin % 32)
		if err := unix.Capset(&hdr, &reduced[0]); err != nil {
			done <- result{fmt.Errorf("%w: capset dropping CAP_PERFMON and CAP_SYS_ADMIN: %v", ErrCapabilities, err)}
			return
		}
		err := f()
		if rerr := unix.Capset(&hdr, &saved[0]); rerr == nil {
			runtime.UnlockOSThread()
		}
		done <- result{err}
	}()
	return (<-done).err
}

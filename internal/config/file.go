package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/ncclbpf/ncclbpf/internal/tuner"
)

// Size limits of the files the plugin reads inside NCCL's init and its
// reloads.
const (
	// MaxPolicyBytes is the largest policy object read (a compiled policy
	// is a few kB; the largest shipped is under 64 kB).
	MaxPolicyBytes = 8 << 20
	// MaxRulesFileBytes is the largest rules file read.
	MaxRulesFileBytes = 1 << 20
)

// ReadRegularFile reads the regular file at path (symlinks followed) if it
// is at most max bytes. Anything else is refused at once, without reading
// and without blocking: a FIFO (which would block until a writer comes), a
// device such as /dev/zero (endless), a directory, a socket, or a file over
// max (a 1 GB file costs a stat, not a read). The error says which.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi, max); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path have become a FIFO since the stat, open
	// does not wait for a writer; the fstat below then refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, fi, max); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: grew past %d bytes while being read", path, max)
	}
	return b, nil
}

// ErrNotRegular is the error of ReadRegularFile for what is not a regular
// file (errors.Is).
var ErrNotRegular = errors.New("not a regular file")

func regular(path string, fi fs.FileInfo, max int64) error {
	m := fi.Mode()
	what := ""
	switch {
	case m.IsRegular():
		if fi.Size() > max {
			return fmt.Errorf("%s: %d bytes, over the limit of %d", path, fi.Size(), max)
		}
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	default:
		what = "of type " + m.Type().String()
	}
	return fmt.Errorf("%s: is %s: %w", path, what, ErrNotRegular)
}

// ParseRulesFile reads a rules file (tuner.ParseRules) of at most
// MaxRulesFileBytes.
func ParseRulesFile(path string) ([]tuner.Rule, error) {
	b, err := ReadRegularFile(path, MaxRulesFileBytes)
	if err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	rules, err := tuner.ParseRules(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("rules file %s: %w", path, err)
	}
	return rules, nil
}

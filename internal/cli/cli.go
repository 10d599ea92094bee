// Package cli holds the conventions that the ncclbpf command line shares
// with the libraries behind its commands (internal/offline, internal/disasm,
// internal/ctl): which errors exit with status 2 (the command was misused)
// or with status 1 and nothing more to print, how --var lists are split, and
// how JSON is printed.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// UsageError is an error caused by how the command was invoked: the
// command exits with status 2 and prints its synopsis.
type UsageError struct{ Err error }

func (u *UsageError) Error() string { return u.Err.Error() }
func (u *UsageError) Unwrap() error { return u.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// AsUsage makes err, about a flag's value, a usage error (exit status 2);
// an internal error (one that starts with BUG) stays a failure.
func AsUsage(err error) error {
	var ue *UsageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "BUG") {
		return err
	}
	return &UsageError{err}
}

// ErrReported makes a command exit with status 1 without printing an
// error: the command has already reported what went wrong on its output.
var ErrReported = errors.New("failed")

// SplitVars returns the NAME=VALUE items of --var flags: each flag may
// hold a comma-separated list; blank items are dropped.
func SplitVars(flags []string) []string {
	var out []string
	for _, f := range flags {
		for _, item := range strings.Split(f, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// WriteJSON prints v as indented JSON, without HTML escaping (a policy
// path or a message keeps its <, > and &).
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Streams are where a command prints: its report (Stdout) and its notes
// and warnings (Stderr).
type Streams struct {
	Stdout io.Writer
	Stderr io.Writer
}

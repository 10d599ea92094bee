// Package badfiles makes the kinds of path a reader of configuration or
// policy files must refuse without reading, for tests.
package badfiles

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Make makes, in dir, one path of each kind the plugin must refuse
// without reading: a FIFO (reading would block until a writer comes),
// /dev/zero (endless), a directory, and a regular file of 1 GB (sparse:
// refused by its size, not read).
func Make(t testing.TB, dir string) map[string]string {
	t.Helper()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder")
	if err := os.Mkdir(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return map[string]string{"FIFO": fifo, "/dev/zero": "/dev/zero", "directory": folder, "1 GB file": huge}
}

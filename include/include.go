// Package include holds the C headers that policies are compiled with
// (ncclbpf.h and the hook headers), embedded so that a binary can hand
// them to a user who has no checkout: "ncclbpf headers DIR" writes them.
package include

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

//go:embed *.h
var files embed.FS

// Names returns the embedded header names, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// Header returns the contents of the embedded header name.
func Header(name string) ([]byte, bool) {
	b, err := files.ReadFile(name)
	return b, err == nil
}

// Write writes every header into dir, creating it. A file that exists with
// other contents is replaced only with overwrite; it returns the paths
// written.
func Write(dir string, overwrite bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, n := range Names() {
		b, _ := Header(n)
		p := filepath.Join(dir, n)
		if old, err := os.ReadFile(p); err == nil && !overwrite && string(old) != string(b) {
			return written, fmt.Errorf("%s exists with other contents (another version of the headers?); --force replaces it", p)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

// Package skeleton writes the C source of a new policy for one hook: a
// small, working program with a map and the comments that say how to
// build, check and try it. The sources compile with clang and the
// project's headers alone (ncclbpf.h needs no kernel header) and pass the
// verifier; the package's tests hold them to that.
package skeleton

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

//go:embed templates/*.bpf.c
var templates embed.FS

// Hooks returns the hooks a skeleton exists for: tuner, profiler, net.
func Hooks() []string {
	ents, _ := templates.ReadDir("templates")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".bpf.c"))
	}
	sort.Strings(out)
	return out
}

// BuildCommand is the clang command line that compiles src to obj with the
// headers in includeDir, as the README gives it.
func BuildCommand(includeDir, src, obj string) string {
	return fmt.Sprintf("clang-19 -target bpf -mcpu=v3 -O2 -g -I %s -c %s -o %s", includeDir, src, obj)
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Source returns the C source of a policy called name for hook (one of
// Hooks). name becomes the program's name, so it must be a C identifier.
func Source(name, hook string) ([]byte, error) {
	if !identifier.MatchString(name) {
		return nil, fmt.Errorf("policy name %q: want a C identifier (letters, digits, _; not starting with a digit; at most 64)", name)
	}
	t, err := templates.ReadFile("templates/" + hook + ".bpf.c")
	if err != nil {
		return nil, fmt.Errorf("no skeleton for hook %q; hooks: %s", hook, strings.Join(Hooks(), ", "))
	}
	s := strings.ReplaceAll(string(t), "__BUILD__", BuildCommand("include", name+".bpf.c", name+".bpf.o"))
	return []byte(strings.ReplaceAll(s, "__NAME__", name)), nil
}

// Write writes the source of Source(name, hook) to path, refusing to
// replace an existing file unless overwrite.
func Write(path, name, hook string, overwrite bool) error {
	src, err := Source(name, hook)
	if err != nil {
		return err
	}
	if !overwrite {
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("%s exists; choose another name or --output, or --force to replace it", path)
		}
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, src, 0o644)
}

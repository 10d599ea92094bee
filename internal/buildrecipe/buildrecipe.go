// Package buildrecipe builds libncclbpf.so, the ncclbpf command and the C
// test hosts for Go tests, through scripts/build.sh: the one recipe that
// the Makefile and the scripts use too, so that a test exercises the
// library and hosts with the flags a release has. TestOneRecipe checks
// that nothing else in the tree builds them.
package buildrecipe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Step is one artefact: a target of scripts/build.sh (lib, lib-testing,
// cli, host, tcpnet, ...), the file to write and the -D flags of a variant.
type Step struct {
	Target string
	Out    string
	Flags  []string
}

// Command returns the command that builds s from the source tree at root,
// with the caller's environment; set its Env to add to it (a cross
// compiler in CC, GOOS and GOARCH, SANITIZE=1).
func Command(root string, s Step) *exec.Cmd {
	cmd := exec.Command(filepath.Join(root, "scripts", "build.sh"), append([]string{s.Target, s.Out}, s.Flags...)...)
	cmd.Dir = root
	return cmd
}

// Build runs the steps in order, each with the caller's environment and
// env added, and stops at the first failure with its output.
func Build(root string, env []string, steps ...Step) error {
	for _, s := range steps {
		cmd := Command(root, s)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("scripts/build.sh %s %s %s: %v\n%s", s.Target, s.Out, strings.Join(s.Flags, " "), err, out)
		}
	}
	return nil
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkCommandLine checks an "ncclbpf CMD ..." line as documentation shows
// it: the command exists and every flag it uses is one of that command's.
func checkCommandLine(line string) error {
	words := shellWords(line)
	if len(words) == 0 || words[0] != "ncclbpf" {
		return fmt.Errorf("not an ncclbpf command line")
	}
	root := newRoot(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	c, rest, err := root.Find(words[1:])
	if err != nil || c == root {
		if len(words) > 1 && strings.HasPrefix(words[1], "-") {
			c, rest = root, words[1:]
		} else {
			return fmt.Errorf("no command %q", strings.Join(words[1:min(2, len(words))], " "))
		}
	}
	c.InitDefaultHelpFlag()
	for _, w := range rest {
		if w == "--" {
			break
		}
		if !strings.HasPrefix(w, "-") || len(w) < 2 || (w[1] >= '0' && w[1] <= '9') {
			continue
		}
		if name, ok := strings.CutPrefix(w, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
				return fmt.Errorf("%s has no flag --%s", c.CommandPath(), name)
			}
			if f := c.Flags().Lookup(name); f != nil && len(f.Annotations[replacedByKey]) > 0 {
				return fmt.Errorf("--%s is deprecated: use --%s", name, f.Annotations[replacedByKey][0])
			}
			continue
		}
		short := w[1:2]
		if c.Flags().ShorthandLookup(short) == nil && c.InheritedFlags().ShorthandLookup(short) == nil {
			return fmt.Errorf("%s has no flag -%s", c.CommandPath(), short)
		}
	}
	return nil
}

// shellWords splits the command part of a documented line: up to a
// comment, a pipe, a redirection or the end of inline code; brackets of
// optional parts and quotes are dropped.
func shellWords(line string) []string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	for _, stop := range []string{"`", "|", ";", "&&", " > ", ")", "'"} {
		if i := strings.Index(line, stop); i >= 0 {
			line = line[:i]
		}
	}
	var out []string
	for _, w := range strings.Fields(line) {
		w = strings.Trim(w, `[]"`)
		if w != "" && w != "..." {
			out = append(out, w)
		}
	}
	return out
}

// cliInvocation finds command lines of the CLI in documentation and
// scripts: "ncclbpf CMD", "$CLI CMD", "{cli} CMD".
var cliInvocation = regexp.MustCompile(`(?:\bncclbpf|"\$CLI"|\$CLI|\{cli\}|\$\(CLI\)) +([a-z][a-z-]*)(?:\s|$|\x60)`)

// TestDocumentedCommandLines: every command line in the README, the docs,
// the example policies' READMEs and the scripts names an existing command
// and only flags it has, in their current spelling.
func TestDocumentedCommandLines(t *testing.T) {
	root := "../.."
	var files []string
	for _, pat := range []string{"*.md", "docs/*.md", "policies/*/README.md", "scripts/*.sh", "testhost/gpu/*.sh", "Makefile"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d documentation files under %s", len(files), root)
	}
	checked := 0
	for _, f := range files {
		if filepath.Base(f) == "gpu-results.md" {
			continue // a record of past runs: its command lines are those that ran then
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			for _, loc := range cliInvocation.FindAllStringSubmatchIndex(line, -1) {
				cmd := line[loc[2]:loc[3]]
				if _, ok := commands[cmd]; !ok && cmd != "help" && cmd != "completion" {
					continue // prose: "ncclbpf runs ...", "ncclbpf is ..."
				}
				text := "ncclbpf " + line[loc[2]:]
				if err := checkCommandLine(text); err != nil {
					t.Errorf("%s:%d: %q: %v", f, n+1, strings.TrimSpace(text), err)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d command lines", checked)
	}
}

func TestCheckCommandLine(t *testing.T) {
	for line, ok := range map[string]bool{
		"ncclbpf verify --json policy.bpf.o":           true,
		"ncclbpf verify --jsn policy.bpf.o":            false,
		"ncclbpf map update --force 1 m 0 -1":          true,
		"ncclbpf map dump --dir /tmp/x 1 m":            true,
		"ncclbpf reload --vars a=1 1 x.o":              false, // deprecated spelling
		"ncclbpf frob":                                 false,
		"ncclbpf stats PID [--cost 2s]  # per-hook":    true,
		"ncclbpf conformance -v --engine all dir":      true,
		"ncclbpf disasm policy.bpf.o | head --lines=3": true,
		"ncclbpf asm -x prog.s":                        false,
		"ncclbpf --version":                            true,
		"ncclbpf completion bash > /etc/ncclbpf":       true,
	} {
		if err := checkCommandLine(line); (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", line, err, ok)
		}
	}
}

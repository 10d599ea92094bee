package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The test command echoes its flags and arguments; it fails on "fail" and
// rejects "bad" as a usage error.
func init() {
	register(&command{
		Name:     "zz-test",
		Args:     "[--n N] [--s S] ARG...",
		Summary:  "a command that only the tests use",
		Examples: []string{"ncclbpf zz-test --n 3 a b"},
		Run: func(e *env, args []string) error {
			fs := e.flags()
			n := fs.Int("n", 0, "a number")
			s := fs.String("s", "", "a string")
			args, err := e.parse(fs, args)
			if err != nil {
				return err
			}
			for _, a := range args {
				switch a {
				case "fail":
					return errors.New("it failed")
				case "bad":
					return usageErrorf("bad argument %q", a)
				case "quiet":
					return errSilentFailure
				}
			}
			fmt.Fprintf(e.Stdout, "n=%d s=%q args=%q\n", *n, *s, args)
			return nil
		},
	})
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExitCodesAndErrors(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		stdout     string // substring
		stderr     string // substring; "" means stderr must be empty
		stderrOnce string // must appear exactly once
	}{
		{args: []string{"zz-test", "a", "--n", "3", "b", "--s=x"}, code: 0, stdout: `n=3 s="x" args=["a" "b"]`},
		{args: []string{"zz-test", "--", "--n", "3"}, code: 0, stdout: `n=0 s="" args=["--n" "3"]`},
		{args: []string{"zz-test", "fail"}, code: 1, stderrOnce: "ncclbpf zz-test: it failed\n"},
		{args: []string{"zz-test", "quiet"}, code: 1},
		{args: []string{"zz-test", "bad"}, code: 2, stderrOnce: `ncclbpf zz-test: bad argument "bad"`},
		{args: []string{"zz-test", "--nope"}, code: 2, stderrOnce: "ncclbpf zz-test: flag provided but not defined: -nope"},
		{args: []string{"zz-test", "--n", "x"}, code: 2, stderrOnce: "ncclbpf zz-test: invalid value"},
		{args: []string{"zz-test", "--help"}, code: 0, stdout: "Usage:\n  ncclbpf zz-test [--n N] [--s S] ARG..."},
		{args: []string{"no-such-command"}, code: 2, stderrOnce: `ncclbpf: unknown command "no-such-command"`},
		{args: []string{}, code: 2, stderrOnce: "Commands:"},
		{args: []string{"--help"}, code: 0, stdout: "zz-test"},
		{args: []string{"help", "zz-test"}, code: 0, stdout: "-n int"},
		{args: []string{"help", "nope"}, code: 2, stderrOnce: `unknown command "nope"`},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		name := strings.Join(tc.args, " ")
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", name, code, tc.code, stderr)
		}
		if !strings.Contains(stdout, tc.stdout) {
			t.Errorf("%q: stdout %q does not contain %q", name, stdout, tc.stdout)
		}
		if tc.stderrOnce != "" {
			if n := strings.Count(stderr, tc.stderrOnce); n != 1 {
				t.Errorf("%q: stderr contains %q %d times, want once:\n%s", name, tc.stderrOnce, n, stderr)
			}
		} else if tc.stderr == "" && tc.code != 2 && stderr != "" {
			t.Errorf("%q: unexpected stderr %q", name, stderr)
		}
	}
}

// Every registered command must describe itself through --help, so that
// "ncclbpf help CMD" works for all of them.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, name := range commandNames() {
		code, stdout, stderr := runCLI("help", name)
		if code != 0 || !strings.Contains(stdout, "Usage:\n  ncclbpf "+name) {
			t.Errorf("help %s: exit %d, stdout %q, stderr %q", name, code, stdout, stderr)
		}
		_, main, _ := runCLI("--help")
		if !strings.Contains(main, name) || !strings.Contains(main, commands[name].Summary) {
			t.Errorf("--help does not list %s with its summary", name)
		}
	}
}

func TestUnknownEngine(t *testing.T) {
	_, err := newEngine("nope")
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("newEngine(nope) = %v, want a usage error naming it", err)
	}
	for _, n := range engineNames() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list engine %s", err, n)
		}
	}
}

// An error of several lines is printed once, continuation lines indented.
func TestMultiLineError(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "bad.s", "foo\nexit\nbar\n")
	code, _, stderr := runCLI("asm", p)
	want := "ncclbpf asm: " + p + ": line 1: unknown mnemonic \"foo\" (in \"foo\")\n    line 3: unknown mnemonic \"bar\" (in \"bar\")\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
}

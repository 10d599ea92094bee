package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/skeleton"
	"github.com/spf13/pflag"
)

// The test command echoes its flags and arguments; it fails on "fail" and
// rejects "bad" as a usage error.
func init() {
	register(&command{
		Use:      "zz-test [--n N] [--s S] ARG...",
		Summary:  "a command that only the tests use",
		Examples: []string{"ncclbpf zz-test --n 3 a b"},
		Setup: func(fs *pflag.FlagSet) runFunc {
			n := fs.Int("n", 0, "a `NUMBER`")
			s := fs.StringP("str", "s", "", "a string")
			return func(e *env, args []string) error { return zzTest(e, args, n, s) }
		},
	})
}

func zzTest(e *env, args []string, n *int, s *string) error {
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
		{args: []string{"zz-test", "a", "--n", "3", "b", "--str=x"}, code: 0, stdout: `n=3 s="x" args=["a" "b"]`},
		{args: []string{"zz-test", "-s", "y", "--n=4", "a"}, code: 0, stdout: `n=4 s="y" args=["a"]`},
		{args: []string{"zz-test", "--", "--n", "3"}, code: 0, stdout: `n=0 s="" args=["--n" "3"]`},
		{args: []string{"zz-test", "fail"}, code: 1, stderrOnce: "ncclbpf zz-test: it failed\n"},
		{args: []string{"zz-test", "quiet"}, code: 1},
		{args: []string{"zz-test", "bad"}, code: 2, stderrOnce: `ncclbpf zz-test: bad argument "bad"`},
		{args: []string{"zz-test", "--nope"}, code: 2, stderrOnce: "ncclbpf zz-test: unknown flag: --nope"},
		{args: []string{"zz-test", "-n", "3"}, code: 2, stderrOnce: "ncclbpf zz-test: unknown shorthand flag: 'n' in -n"},
		{args: []string{"zz-test", "--n", "x"}, code: 2, stderrOnce: `ncclbpf zz-test: invalid argument "x" for "--n" flag: want an integer` + "\n"},
		{args: []string{"zz-test", "--help"}, code: 0, stdout: "Usage:\n  ncclbpf zz-test [--n N] [--s S] ARG..."},
		{args: []string{"zz-test", "-h"}, code: 0, stdout: "  -s, --str string"},
		{args: []string{"zz-test", "--help"}, code: 0, stdout: "      --n NUMBER"},
		{args: []string{"ps", "--timeout", "5"}, code: 2, stderrOnce: `ncclbpf ps: invalid argument "5" for "--timeout" flag: want a duration with its unit, such as 500ms, 2s or 5m` + "\n"},
		{args: []string{"no-such-command"}, code: 2, stderrOnce: `ncclbpf: unknown command "no-such-command"`},
		{args: []string{}, code: 2, stderrOnce: "Commands:"},
		{args: []string{"--help"}, code: 0, stdout: "zz-test"},
		{args: []string{"help", "zz-test"}, code: 0, stdout: "--n NUMBER"},
		{args: []string{"help", "--help"}, code: 0, stdout: "ncclbpf help"},
		{args: []string{"help", "map", "update"}, code: 0, stdout: "Usage:\n  ncclbpf map update [--dir DIR] [--force] PID MAP KEY VALUE"},
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

// Every command and subcommand describes itself alike through -h, --help
// and "ncclbpf help CMD": a synopsis with its flags, the flags, examples.
func TestEveryCommandHasHelp(t *testing.T) {
	_, mainHelp, _ := runCLI("--help")
	for _, name := range commandNames() {
		c := commands[name]
		if !strings.Contains(mainHelp, "  "+name) || !strings.Contains(mainHelp, c.Summary) {
			t.Errorf("--help does not list %s with its summary", name)
		}
		for _, reg := range append([]*command{c}, c.Sub...) {
			path := strings.Fields(reg.path())
			code, help, stderr := runCLI(append([]string{"help"}, path...)...)
			if code != 0 || !strings.Contains(help, "Usage:\n  ncclbpf "+reg.synopses()[0]+"\n") {
				t.Errorf("help %s: exit %d, stdout %q, stderr %q", reg.path(), code, help, stderr)
			}
			for _, flag := range []string{"-h", "--help"} {
				if code, out, _ := runCLI(append(path, flag)...); code != 0 || out != help {
					t.Errorf("%s %s: exit %d, output differs from help %s:\n%s", reg.path(), flag, code, reg.path(), out)
				}
			}
			if len(reg.Examples) == 0 && reg.Name() != "zz-test" {
				t.Errorf("%s: no examples", reg.path())
			}
			if reg.Setup != nil && strings.Contains(help, "\nFlags:\n      --") && !strings.Contains(reg.Use, "--") {
				t.Errorf("%s: the synopsis %q shows none of its flags", reg.path(), reg.Use)
			}
		}
	}
	// cobra's own commands follow the same rules.
	for _, args := range [][]string{{"help", "completion"}, {"completion", "--help"}, {"help", "help"}} {
		if code, out, _ := runCLI(args...); code != 0 || !strings.Contains(out, "Usage:\n  ncclbpf ") {
			t.Errorf("%q: exit %d\n%s", args, code, out)
		}
	}
}

// The command tree holds every command the tool documents, whichever file
// or library implements it: the main help and the help command list each
// one, and each answers its own --help. The list is written out here, not
// read from the registry, so that a command whose registration is lost is
// noticed.
func TestHelpListsEveryCommand(t *testing.T) {
	want := []string{"agree", "asm", "check", "completion", "conformance", "disasm", "exporter", "headers", "help",
		"map", "new", "ps", "reload", "report", "run", "stats", "verify"}
	_, mainHelp, _ := runCLI("--help")
	_, helpCmd, _ := runCLI("help")
	for _, name := range want {
		if !strings.Contains(mainHelp, "\n  "+name+" ") || !strings.Contains(helpCmd, "\n  "+name+" ") {
			t.Errorf("--help or help does not list %s", name)
		}
		if code, out, _ := runCLI(name, "--help"); code != 0 || !strings.HasPrefix(out, "ncclbpf "+name+": ") {
			t.Errorf("%s --help: exit %d, %q", name, code, out)
		}
	}
	for _, verb := range []string{"list", "dump", "lookup", "update", "delete"} {
		if code, out, _ := runCLI("help", "map", verb); code != 0 || !strings.Contains(out, "Usage:\n  ncclbpf map "+verb+" ") {
			t.Errorf("help map %s: exit %d, %q", verb, code, out)
		}
	}
	names := []string{"completion", "help"}
	for _, n := range commandNames() {
		if !strings.HasPrefix(n, "zz-") { // registered by these tests
			names = append(names, n)
		}
	}
	if len(names) != len(want) {
		t.Errorf("registered commands %q (with completion and help), want %q: update the list", names, want)
	}
}

// Every flag an example of the help texts uses exists on its command.
func TestExamplesUseExistingFlags(t *testing.T) {
	for _, name := range commandNames() {
		c := commands[name]
		for _, reg := range append([]*command{c}, c.Sub...) {
			for _, ex := range reg.Examples {
				if err := checkCommandLine(ex[strings.Index(ex, "ncclbpf "):]); err != nil {
					t.Errorf("%s example %q: %v", reg.path(), ex, err)
				}
			}
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, stderr := runCLI("--version")
	if code != 0 || !strings.HasPrefix(out, "ncclbpf ") || !strings.Contains(out, runtime.Version()) || stderr != "" {
		t.Errorf("--version: exit %d, %q, stderr %q", code, out, stderr)
	}
	// A test binary has no module version: "(devel)", never an empty word.
	if strings.Contains(out, "ncclbpf  ") || strings.Contains(out, "ncclbpf (") && !strings.Contains(out, "(devel)") {
		t.Errorf("--version: %q", out)
	}
	version, revision = "v9.8.7", "0123abcd"
	defer func() { version, revision = "", "" }()
	// The revision stamped at link time (make, make dist) stands for the VCS stamp.
	if _, out, _ := runCLI("--version"); !strings.HasPrefix(out, "ncclbpf v9.8.7 (commit 0123abcd, ") || strings.Count(out, "commit ") != 1 {
		t.Errorf("--version with a linked version: %q", out)
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_ncclbpf", "zsh": "#compdef ncclbpf", "fish": "complete -c ncclbpf"} {
		code, out, stderr := runCLI("completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, script lacks %q", shell, code, stderr, want)
		}
	}
	if code, _, _ := runCLI("completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
	// What the scripts ask the binary: commands, then flag values.
	code, out, _ := runCLI("__complete", "ver")
	if code != 0 || !strings.Contains(out, "verify\t") {
		t.Errorf("__complete ver: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI("__complete", "run", "--engine", "")
	if code != 0 || !strings.Contains(out, "interp\n") || !strings.Contains(out, "jit\n") {
		t.Errorf("__complete run --engine: exit %d\n%s", code, out)
	}
	// PIDs from the control directory; files after reload's PID.
	dir, _ := startFake(t)
	t.Setenv(control.EnvDir, dir)
	for _, args := range [][]string{{"stats", ""}, {"map", "dump", ""}, {"reload", ""}} {
		code, out, _ = runCLI(append([]string{"__complete"}, args...)...)
		if code != 0 || !strings.HasPrefix(out, itoa(os.Getpid())+"\n") {
			t.Errorf("__complete %q: exit %d\n%s", args, code, out)
		}
	}
	if code, out, _ = runCLI("__complete", "reload", "1", ""); code != 0 || !strings.Contains(out, ":0\n") {
		t.Errorf("__complete reload PID: exit %d, want file completion\n%s", code, out)
	}
	// A command's own values: new --hook takes three hooks, not every hook.
	code, out, _ = runCLI("__complete", "new", "--hook", "")
	if want := strings.Join(skeleton.Hooks(), "\n") + "\n:4\n"; code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("__complete new --hook: exit %d\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runCLI("__complete", "verify", "--hook", "")
	if code != 0 || !strings.Contains(out, "profiler/coll_end\n") {
		t.Errorf("__complete verify --hook: exit %d\n%s", code, out)
	}
}

// TestBashCompletionWithoutPackage: the bash script completes in a bash
// without the bash-completion package (--norc: nothing of it is loaded).
// The binary is stood in for by a shell function that answers what
// "ncclbpf __complete new --hook" answers for an empty word.
func TestBashCompletionWithoutPackage(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, script, _ := runCLI("completion", "bash")
	_, answer, _ := runCLI("__complete", "new", "--hook", "")
	dir := t.TempDir()
	path := writeFile(t, dir, "ncclbpf.bash", script)
	answerPath := writeFile(t, dir, "answer", answer)
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `
ncclbpf() { cat "$ANSWER"; }
source "$SCRIPT"
COMP_WORDS=(ncclbpf new --hook ""); COMP_CWORD=3; COMP_LINE="ncclbpf new --hook "; COMP_POINT=${#COMP_LINE}
__start_ncclbpf ncclbpf "" --hook 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}" | sort`)
	cmd.Env = append(os.Environ(), "SCRIPT="+path, "ANSWER="+answerPath)
	out, err := cmd.CombinedOutput()
	if want := "net\nprofiler\ntuner\n"; err != nil || string(out) != want {
		t.Errorf("bash completion of new --hook without bash-completion: %v, got\n%s\nwant\n%s", err, out, want)
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

// The spellings that changed still work, hidden from the help, with a
// notice that names the current one.
func TestDeprecatedSpellings(t *testing.T) {
	code, stdout, stderr := runCLI("run", sizeAwareObj, "--vars", "size_lo=1M,size_hi=2M", "--bytes", "1MiB", "--json")
	if code != 0 || stderr != "ncclbpf run: --vars is deprecated: use --var\n" || !strings.Contains(stdout, `"applied": true`) ||
		!json.Valid([]byte(stdout)) {
		t.Errorf("run --vars: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if _, help, _ := runCLI("help", "run"); strings.Contains(help, "--vars") {
		t.Error("help run lists --vars")
	}
	if _, help, _ := runCLI("help", "agree"); strings.Contains(help, "--out ") {
		t.Error("help agree lists --out")
	}
}

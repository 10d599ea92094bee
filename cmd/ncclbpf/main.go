// Command ncclbpf loads, verifies, runs and inspects eBPF policies for
// NCCL's plugin slots.
//
// Each subcommand lives in its own file of this package and registers itself
// from an init function:
//
//	func init() {
//		register(&command{
//			Name:     "verify",
//			Args:     "OBJ",
//			Summary:  "check that an object file's programs are safe to load",
//			Examples: []string{"ncclbpf verify policy.bpf.o"},
//			Run:      runVerify,
//		})
//	}
//
//	func runVerify(e *env, args []string) error {
//		fs := e.flags()
//		section := fs.String("section", "", "verify only this section")
//		args, err := e.parse(fs, args)
//		if err != nil {
//			return err
//		}
//		if len(args) != 1 {
//			return usageErrorf("want one object file, got %d arguments", len(args))
//		}
//		...
//	}
//
// Exit codes: 0 success, 1 failure, 2 usage error. An error is printed once,
// to stderr, as "ncclbpf CMD: message".
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// command is one subcommand.
type command struct {
	// Name is the word that selects the command: "ncclbpf NAME ...".
	Name string
	// Args is the synopsis of what follows the name, e.g.
	// "[--engine NAME] DIR...". Flags are listed by the help text itself.
	Args string
	// Summary is one line, lower case, without a final period.
	Summary string
	// Help is an optional longer description (paragraphs, plain text).
	Help string
	// Examples are complete command lines, each optionally followed by
	// "  # what it does".
	Examples []string
	// Run executes the command. It parses its flags with e.flags and
	// e.parse. A returned error is printed once by main; use
	// usageErrorf for misuse (exit 2) and errSilentFailure to exit 1 with
	// nothing more to say.
	Run func(e *env, args []string) error
}

// commands is the registry, filled by register from init functions.
var commands = map[string]*command{}

// register adds c to the registry. It panics on a programming error (a
// duplicate or incomplete registration), which happens at init time and is
// caught by the package's tests.
func register(c *command) {
	if c.Name == "" || c.Summary == "" || c.Run == nil {
		panic(fmt.Sprintf("ncclbpf: incomplete command registration %q", c.Name))
	}
	if _, dup := commands[c.Name]; dup {
		panic(fmt.Sprintf("ncclbpf: command %q registered twice", c.Name))
	}
	commands[c.Name] = c
}

// env is what a running command sees: its output streams and its own
// registration (for usage messages).
type env struct {
	Stdout io.Writer
	Stderr io.Writer
	cmd    *command
}

// usageError is an error caused by how the command was invoked.
type usageError struct{ err error }

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }

// usageErrorf returns an error that makes the command exit with status 2.
func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// errSilentFailure makes a command exit with status 1 without printing an
// error: the command has already reported what went wrong on its output.
var errSilentFailure = errors.New("failed")

// errHelpShown ends a command successfully after --help printed its help.
var errHelpShown = errors.New("help shown")

// flags returns a flag set for the running command. Parse it with e.parse.
func (e *env) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(e.cmd.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by main
	return fs
}

// parse parses args with fs and returns the positional arguments. Flags may
// come before, between or after positional arguments; "--" ends the flags.
func (e *env) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				writeCommandHelp(e.Stdout, e.cmd, fs)
				return nil, errHelpShown
			}
			return nil, &usageError{err}
		}
		left := fs.Args()
		if len(left) == 0 {
			return positional, nil
		}
		consumed := len(rest) - len(left)
		if consumed > 0 && rest[consumed-1] == "--" {
			return append(positional, left...), nil
		}
		positional = append(positional, left[0])
		rest = left[1:]
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeMainHelp(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		writeMainHelp(stdout)
		return exitOK
	case "help":
		return runHelp(args[1:], stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ncclbpf: unknown command %q; commands: %s\n", args[0], strings.Join(commandNames(), ", "))
		fmt.Fprintln(stderr, "Run 'ncclbpf --help' for usage.")
		return exitUsage
	}
	e := &env{Stdout: stdout, Stderr: stderr, cmd: c}
	err := c.Run(e, args[1:])
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.Is(err, errSilentFailure):
		return exitFailure
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ncclbpf %s: %s\n", c.Name, indent(err))
		fmt.Fprintf(stderr, "Usage: ncclbpf %s %s (run 'ncclbpf help %s' for details)\n", c.Name, c.Args, c.Name)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "ncclbpf %s: %s\n", c.Name, indent(err))
		return exitFailure
	}
}

// indent returns err's message with continuation lines (errors.Join puts
// one error per line) indented under the first.
func indent(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "\n    ")
}

func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeMainHelp(stdout)
		return exitOK
	}
	if len(args) > 1 {
		fmt.Fprintln(stderr, "ncclbpf help: want at most one command name")
		return exitUsage
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ncclbpf help: unknown command %q; commands: %s\n", args[0], strings.Join(commandNames(), ", "))
		return exitUsage
	}
	// Let the command describe its flags: run it with --help.
	e := &env{Stdout: stdout, Stderr: stderr, cmd: c}
	if err := c.Run(e, []string{"--help"}); err != nil && !errors.Is(err, errHelpShown) {
		fmt.Fprintf(stderr, "ncclbpf help: %s: %v\n", c.Name, err)
		return exitFailure
	}
	return exitOK
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func writeMainHelp(w io.Writer) {
	fmt.Fprint(w, `ncclbpf runs verified, JIT-compiled eBPF policies inside NCCL's plugin slots
(tuner, profiler, net) and is the tool to check, try and inspect them.

Usage:
  ncclbpf COMMAND [flags] [arguments]

Commands:
`)
	names := commandNames()
	width := 4
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].Summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "show a command's flags and examples")
	var examples []string
	for _, n := range names {
		if ex := commands[n].Examples; len(ex) > 0 {
			examples = append(examples, ex[0])
		}
	}
	if len(examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, ex := range examples {
			fmt.Fprintf(w, "  %s\n", ex)
		}
	}
	fmt.Fprint(w, "\nRun 'ncclbpf help COMMAND' for a command's flags and more examples.\n"+
		"Exit status: 0 success, 1 failure, 2 usage error.\n")
}

func writeCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "ncclbpf %s: %s\n\nUsage:\n  ncclbpf %s %s\n", c.Name, c.Summary, c.Name, c.Args)
	if c.Help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.Help, "\n"))
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if len(c.Examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, ex := range c.Examples {
			fmt.Fprintf(w, "  %s\n", ex)
		}
	}
}

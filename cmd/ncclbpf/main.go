// Command ncclbpf loads, verifies, runs and inspects eBPF policies for
// NCCL's plugin slots.
//
// The command line is built with cobra (GNU-style flags, -h/--help on every
// command, shell completion). Each subcommand lives in its own file of this
// package and registers itself from an init function; Setup declares the
// flags and returns the function that runs with them:
//
//	func init() {
//		register(&command{
//			Use:      "verify [--section S] [--hook NAME] [--json] OBJ",
//			Summary:  "check that an object file's programs are safe to load",
//			Examples: []string{"ncclbpf verify policy.bpf.o"},
//			Setup: func(fs *pflag.FlagSet) runFunc {
//				section := fs.String("section", "", "verify only this section")
//				return func(e *env, args []string) error {
//					if len(args) != 1 {
//						return usageErrorf("want one object file, got %d arguments", len(args))
//					}
//					...
//				}
//			},
//		})
//	}
//
// The commands are thin: the work is done by libraries (internal/offline
// for verify and run, internal/disasm, internal/ctl for the commands that
// talk to running processes), which return cli.UsageError for misuse and
// cli.ErrReported for a failure they have already printed.
//
// Exit codes: 0 success, 1 failure, 2 usage error. An error is printed once,
// to stderr, as "ncclbpf CMD: message".
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// runFunc runs a command on its positional arguments, with the flags its
// Setup declared already parsed.
type runFunc func(e *env, args []string) error

// command is one subcommand (or a group of them, such as map).
type command struct {
	// Use is the synopsis: the name, then flags and arguments, e.g.
	// "verify [--section S] OBJ". Further lines give other forms.
	Use string
	// Summary is one line, lower case, without a final period.
	Summary string
	// Help is an optional longer description (paragraphs, plain text).
	Help string
	// Examples are complete command lines, each optionally followed by
	// "  # what it does".
	Examples []string
	// Setup declares the command's flags on fs and returns what runs with
	// them. A returned error is printed once by main; use usageErrorf for
	// misuse (exit 2) and errSilentFailure to exit 1 with nothing more to
	// say. Nil for a group whose subcommands do the work.
	Setup func(fs *pflag.FlagSet) runFunc
	// Persistent declares flags that the command's subcommands share.
	Persistent func(fs *pflag.FlagSet)
	// Sub are the subcommands of a group.
	Sub []*command
	// PositionalTail stops flag parsing at the first positional argument,
	// so that later arguments such as -1 stay arguments.
	PositionalTail bool
	// Complete suggests positional arguments for shell completion, given
	// those already typed; nil lets the shell complete file names.
	Complete func(args []string) []string

	parent *command
}

// Name is the word that selects the command.
func (c *command) Name() string {
	name, _, _ := strings.Cut(c.Use, " ")
	return name
}

// path is the command's words after "ncclbpf", e.g. "map update".
func (c *command) path() string {
	if c.parent != nil {
		return c.parent.path() + " " + c.Name()
	}
	return c.Name()
}

// synopses are the command's usage lines without "ncclbpf ".
func (c *command) synopses() []string {
	lines := strings.Split(c.Use, "\n")
	prefix := ""
	if c.parent != nil {
		prefix = c.parent.path() + " "
	}
	for i, l := range lines {
		lines[i] = prefix + strings.TrimSpace(l)
	}
	return lines
}

// commands is the registry, filled by register from init functions.
var commands = map[string]*command{}

// register adds c to the registry. It panics on a programming error (a
// duplicate or incomplete registration), which happens at init time and is
// caught by the package's tests.
func register(c *command) {
	if c.Name() == "" || c.Summary == "" || (c.Setup == nil && len(c.Sub) == 0) {
		panic(fmt.Sprintf("ncclbpf: incomplete command registration %q", c.Name()))
	}
	if _, dup := commands[c.Name()]; dup {
		panic(fmt.Sprintf("ncclbpf: command %q registered twice", c.Name()))
	}
	for _, s := range c.Sub {
		s.parent = c
	}
	commands[c.Name()] = c
}

// env is what a running command sees: its output streams and its own
// registration (for usage messages).
type env struct {
	cli.Streams
	cmd *command
}

// usageError is an error caused by how the command was invoked.
type usageError = cli.UsageError

// usageErrorf returns an error that makes the command exit with status 2.
func usageErrorf(format string, args ...any) error { return cli.Usagef(format, args...) }

// errSilentFailure makes a command exit with status 1 without printing an
// error: the command has already reported what went wrong on its output.
var errSilentFailure = cli.ErrReported

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code. It builds a
// fresh command tree for each call, so that flag values never carry over.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	c, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ue *usageError
	cmdPath := strings.TrimPrefix(c.CommandPath(), "ncclbpf ")
	switch {
	case errors.Is(err, errSilentFailure):
		return exitFailure
	case c == root && strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintf(stderr, "ncclbpf: unknown command %q; commands: %s\n", args[0], strings.Join(commandNames(), ", "))
		if s := suggest(root, args[0]); s != "" {
			fmt.Fprintf(stderr, "Did you mean %q?\n", s)
		}
		fmt.Fprintln(stderr, "Run 'ncclbpf --help' for usage.")
		return exitUsage
	case c == root:
		fmt.Fprintf(stderr, "ncclbpf: %s\n", indent(err))
		fmt.Fprintln(stderr, "Run 'ncclbpf --help' for usage.")
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFailure
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ncclbpf %s: %s\n", cmdPath, indent(err))
		use := c.Annotations["synopsis"]
		fmt.Fprintf(stderr, "Usage: ncclbpf %s (run 'ncclbpf help %s' for details)\n", use, cmdPath)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "ncclbpf %s: %s\n", cmdPath, indent(err))
		return exitFailure
	}
}

// cleanFlagError rewrites the parser's message for a bad flag value
// without the text of Go's number and duration parsers.
func cleanFlagError(err error) error {
	msg := err.Error()
	for cut, want := range map[string]string{
		": strconv.ParseInt: ":     "want an integer",
		": strconv.ParseUint: ":    "want a non-negative integer",
		": strconv.ParseFloat: ":   "want a number",
		": strconv.ParseBool: ":    "want true or false",
		": time: invalid duration": "want a duration such as 500ms, 2s or 5m",
		": time: missing unit":     "want a duration with its unit, such as 500ms, 2s or 5m",
		": time: unknown unit":     "want a duration with a unit of ns, us, ms, s, m or h",
	} {
		if i := strings.Index(msg, cut); i >= 0 {
			return errors.New(msg[:i] + ": " + want)
		}
	}
	return err
}

// suggest returns the command name closest to a mistyped one, or "".
func suggest(root *cobra.Command, typo string) string {
	if s := root.SuggestionsFor(typo); len(s) > 0 {
		return s[0]
	}
	return ""
}

// indent returns err's message with continuation lines (errors.Join puts
// one error per line) indented under the first.
func indent(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "\n    ")
}

// commandNames returns the registered command names, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

const rootSummary = "ncclbpf runs verified, JIT-compiled eBPF policies inside NCCL's plugin slots\n" +
	"(tuner, profiler, net) and is the tool to write, check, try and inspect them."

// newRoot builds the command tree.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "ncclbpf",
		Short:         rootSummary,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          nil, // unknown subcommands are errors
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: false,
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	showVersion := root.Flags().Bool("version", false, "print the version (module version, VCS revision, Go version) and exit")
	root.RunE = func(c *cobra.Command, args []string) error {
		if *showVersion {
			fmt.Fprintln(stdout, versionLine())
			return nil
		}
		writeMainHelp(stderr, root)
		return &usageError{Err: errors.New("want a command")}
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{Err: cleanFlagError(err)} })
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			writeMainHelp(c.OutOrStdout(), root)
			return
		}
		writeCommandHelp(c.OutOrStdout(), c)
	})
	root.SetHelpCommand(helpCommand(root))
	for _, name := range commandNames() {
		root.AddCommand(build(commands[name], stdout, stderr))
	}
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "print a shell completion script: bash, zsh or fish"
			c.Annotations = map[string]string{"synopsis": "completion bash|zsh|fish|powershell"}
			c.Example = "  source <(ncclbpf completion bash)                # this shell\n" +
				"  ncclbpf completion bash > /etc/bash_completion.d/ncclbpf\n" +
				"  ncclbpf completion zsh > \"${fpath[1]}/_ncclbpf\"\n" +
				"  ncclbpf completion fish > ~/.config/fish/completions/ncclbpf.fish"
			var shells []string
			for _, s := range c.Commands() {
				s.Annotations = map[string]string{"synopsis": "completion " + s.Name() + " [--no-descriptions]"}
				shells = append(shells, s.Name())
				if s.Name() == "bash" {
					s.RunE = func(sc *cobra.Command, _ []string) error {
						noDesc, _ := sc.Flags().GetBool("no-descriptions")
						if _, err := io.WriteString(sc.OutOrStdout(), bashFallbacks); err != nil {
							return err
						}
						return root.GenBashCompletionV2(sc.OutOrStdout(), !noDesc)
					}
				}
			}
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(_ *cobra.Command, args []string) error {
				if len(args) == 0 {
					return usageErrorf("want a shell: %s", strings.Join(shells, ", "))
				}
				return usageErrorf("unknown shell %q: want %s", args[0], strings.Join(shells, ", "))
			}
		}
	}
	return root
}

// bashFallbacks stand in for the two functions of the bash-completion
// package that cobra's bash script calls, where that package is not
// installed, so that "source <(ncclbpf completion bash)" works in a plain
// bash. Where it is installed (before or after), its own functions are used.
const bashFallbacks = `# ncclbpf bash completion. Works with or without the bash-completion package.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    # Without bash-completion: the words as bash split them.
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
}
fi
if ! declare -F _filedir >/dev/null 2>&1; then
_filedir() {
    local IFS=$'\n'
    if [[ $1 == -d ]]; then
        COMPREPLY=($(compgen -d -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
fi
`

// build turns a registration into a cobra command.
func build(c *command, stdout, stderr io.Writer) *cobra.Command {
	cc := &cobra.Command{
		Use:         c.Use,
		Short:       c.Summary,
		Long:        c.Help,
		Annotations: map[string]string{"synopsis": c.synopses()[0]},
	}
	if len(c.Examples) > 0 {
		cc.Example = "  " + strings.Join(c.Examples, "\n  ")
	}
	if c.Persistent != nil {
		c.Persistent(cc.PersistentFlags())
	}
	if c.PositionalTail {
		cc.Flags().SetInterspersed(false)
	}
	if c.Complete != nil {
		cc.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if list := c.Complete(args); list != nil {
				return list, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
		}
	}
	var runIt runFunc
	if c.Setup != nil {
		runIt = c.Setup(cc.Flags())
	}
	cc.InitDefaultHelpFlag()
	registerFlagCompletions(cc)
	for _, s := range c.Sub {
		cc.AddCommand(build(s, stdout, stderr))
	}
	if runIt == nil {
		// A group: a verb is required.
		runIt = func(e *env, args []string) error {
			var verbs []string
			for _, s := range c.Sub {
				verbs = append(verbs, s.Name())
			}
			if len(args) == 0 {
				return usageErrorf("want one of: %s", strings.Join(verbs, ", "))
			}
			return usageErrorf("unknown %s verb %q (want %s)", c.Name(), args[0], strings.Join(verbs, ", "))
		}
	}
	cc.RunE = func(_ *cobra.Command, args []string) error {
		cc.Flags().Visit(func(f *pflag.Flag) {
			if now := f.Annotations[replacedByKey]; len(now) == 1 {
				fmt.Fprintf(stderr, "ncclbpf %s: --%s is deprecated: use --%s\n", c.path(), f.Name, now[0])
			}
		})
		return runIt(&env{Streams: cli.Streams{Stdout: stdout, Stderr: stderr}, cmd: c}, args)
	}
	return cc
}

// replacedByKey annotates a flag kept for an old spelling with the new one.
const replacedByKey = "ncclbpf-replaced-by"

// replacedBy hides flag old, kept for compatibility, and makes its use
// print a notice to stderr that names the current spelling (stdout stays
// clean for --json).
func replacedBy(fs *pflag.FlagSet, old, now string) {
	_ = fs.MarkHidden(old)
	_ = fs.SetAnnotation(old, replacedByKey, []string{now})
}

// helpCommand is "ncclbpf help [COMMAND...]": the main help or a command's.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:         "help [COMMAND [SUBCOMMAND]]",
		Short:       "show a command's flags and examples",
		Annotations: map[string]string{"synopsis": "help [COMMAND [SUBCOMMAND]]"},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				writeMainHelp(root.OutOrStdout(), root)
				return nil
			}
			target, rest, err := root.Find(args)
			if err != nil || target == root || len(rest) > 0 {
				return usageErrorf("unknown command %q; commands: %s", strings.Join(args, " "), strings.Join(commandNames(), ", "))
			}
			writeCommandHelp(root.OutOrStdout(), target)
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return commandNames(), cobra.ShellCompDirectiveNoFileComp
		},
	}
}

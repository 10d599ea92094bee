package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help texts, --version, shell completion of flag values and JSON output:
// what every command shares.

// writeMainHelp prints "ncclbpf --help": what the tool is, its commands and
// one example of each.
func writeMainHelp(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  ncclbpf COMMAND [flags] [arguments]\n  ncclbpf --version\n\nCommands:\n", root.Short)
	var cmds []*cobra.Command
	width := 0
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() || c.Name() == "help" {
			cmds = append(cmds, c)
			width = max(width, len(c.Name()))
		}
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name(), c.Short)
	}
	var examples []string
	for _, n := range commandNames() {
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
	fmt.Fprint(w, "\nRun 'ncclbpf help COMMAND' (or 'ncclbpf COMMAND --help') for a command's flags and more examples.\n"+
		"Flags are GNU-style (--name VALUE or --name=VALUE) and may follow the arguments; -- ends them.\n"+
		"Exit status: 0 success, 1 failure, 2 usage error.\n")
}

// writeCommandHelp prints a command's help: summary, synopses, description,
// subcommands, flags and examples.
func writeCommandHelp(w io.Writer, c *cobra.Command) {
	path := strings.TrimPrefix(c.CommandPath(), "ncclbpf ")
	fmt.Fprintf(w, "ncclbpf %s: %s\n\nUsage:\n", path, c.Short)
	if reg := registered(c); reg != nil {
		for _, s := range reg.synopses() {
			fmt.Fprintf(w, "  ncclbpf %s\n", s)
		}
	} else if s := c.Annotations["synopsis"]; s != "" {
		fmt.Fprintf(w, "  ncclbpf %s\n", s)
	} else {
		fmt.Fprintf(w, "  %s\n", c.UseLine())
	}
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprint(w, "\nCommands:\n")
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				fmt.Fprintf(w, "  %-8s  %s\n", s.Name(), s.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", c.LocalFlags().FlagUsages())
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nFlags of %s:\n%s", strings.TrimSuffix(c.Parent().CommandPath(), " "), c.InheritedFlags().FlagUsages())
	}
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
}

// registered finds the registration of a cobra command, nil for cobra's
// own (completion, help).
func registered(c *cobra.Command) *command {
	var words []string
	for p := c; p.HasParent(); p = p.Parent() {
		words = append([]string{p.Name()}, words...)
	}
	if len(words) == 0 {
		return nil
	}
	reg := commands[words[0]]
	for _, w := range words[1:] {
		if reg == nil {
			return nil
		}
		var next *command
		for _, s := range reg.Sub {
			if s.Name() == w {
				next = s
			}
		}
		reg = next
	}
	return reg
}

// version and revision are set at link time by the Makefile and make dist
// (-ldflags "-X main.version=v1.2.3 -X main.revision=0123abcd"), so that
// a build without a VCS stamp (-buildvcs=false, a tarball, -trimpath) still
// says what it is; empty otherwise, and the module version and VCS stamp
// of the build are used.
var (
	version  = ""
	revision = ""
)

// versionLine is what --version prints: the version (from the link, or the
// module version "go install" recorded, or "(devel)"), the VCS revision and
// time when the build recorded them, and the Go toolchain.
func versionLine() string {
	v := version
	var extra []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" && revision == "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if settings["vcs.modified"] == "true" {
				rev += "+modified"
			}
			extra = append(extra, "commit "+rev)
		}
		if t := settings["vcs.time"]; t != "" {
			extra = append(extra, t)
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if revision != "" {
		extra = append([]string{"commit " + revision}, extra...)
	}
	extra = append(extra, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("ncclbpf %s (%s)", v, strings.Join(extra, ", "))
}

// registerFlagCompletions suggests the values of the flags that take a
// name from a fixed set.
func registerFlagCompletions(c *cobra.Command) {
	fixed := map[string]func() []string{
		"engine": engineNames,
		"hook": func() []string {
			var names []string
			for _, h := range hook.All() {
				names = append(names, h.Name)
			}
			return names
		},
		"maps": func() []string { return []string{"changed", "all", "none"} },
		"elem": func() []string { return []string{"u64", "u32", "i64", "i32"} },
	}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if own := f.Annotations[valuesKey]; own != nil {
			fixed[f.Name] = func() []string { return own }
		}
	})
	for name, values := range fixed {
		if c.Flags().Lookup(name) == nil {
			continue
		}
		_ = c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return values(), cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// valuesKey annotates a flag with the values its command accepts, which
// shell completion offers instead of those of the flag's name elsewhere
// (new --hook takes three hooks, run --hook every hook).
const valuesKey = "ncclbpf-values"

// flagValues declares the values that flag name of fs accepts, for shell
// completion.
func flagValues(fs *pflag.FlagSet, name string, values []string) {
	_ = fs.SetAnnotation(name, valuesKey, values)
}

// writeJSON prints v as indented JSON, without HTML escaping (a policy
// path or a message keeps its <, > and &).
func writeJSON(e *env, v any) error { return cli.WriteJSON(e.Stdout, v) }

// unescapeHTML replaces \u003c, \u003e and \u0026 escapes in valid JSON by
// the characters, leaving escaped backslashes alone.
func unescapeHTML(js []byte) []byte {
	out := make([]byte, 0, len(js))
	for i := 0; i < len(js); i++ {
		if js[i] != '\\' || i+1 >= len(js) {
			out = append(out, js[i])
			continue
		}
		if js[i+1] == 'u' && i+6 <= len(js) {
			switch strings.ToLower(string(js[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, js[i], js[i+1]) // any other escape, \\ included
		i++
	}
	return out
}

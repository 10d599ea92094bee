package main

import (
	"fmt"
	"strings"

	"github.com/ncclbpf/ncclbpf/include"
	"github.com/ncclbpf/ncclbpf/internal/skeleton"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "new --hook tuner|profiler|net [-o FILE] [--force] NAME",
		Summary: "write the C source of a new policy: a small working program for one hook",
		Help: `Writes NAME.bpf.c (or -o FILE): a policy with one program called NAME for the
hook, a map, and comments that say how to build, check and try it. It
compiles with clang and the project's headers alone, and passes the
verifier as written. The build command is printed; 'ncclbpf headers DIR'
writes the headers where there is no ncclbpf checkout.

Hooks: tuner (NCCL's getCollInfo: choose algorithm and protocol), profiler
(profiler/coll_end: measure completed collectives), net (net/send_end:
bytes per remote endpoint).`,
		Examples: []string{
			"ncclbpf new my_tuner --hook tuner",
			"ncclbpf new coll_times --hook profiler -o policies/coll_times.bpf.c",
			"ncclbpf new peers --hook net",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			hookName := fs.String("hook", "", "the `HOOK` of the program: "+strings.Join(skeleton.Hooks(), ", "))
			flagValues(fs, "hook", skeleton.Hooks())
			out := fs.StringP("output", "o", "", "write the source to `FILE` (default NAME.bpf.c)")
			force := fs.Bool("force", false, "replace an existing file")
			return func(e *env, args []string) error { return runNew(e, args, *hookName, *out, *force) }
		},
	})
	register(&command{
		Use:     "headers [--force] DIR",
		Summary: "write the C headers policies are compiled with (embedded in this binary) into DIR",
		Help: `Writes ncclbpf.h and the hook headers (` + strings.Join(include.Names(), ", ") + `)
into DIR, the headers this binary's verifier and hooks were built for, so that
a policy can be compiled without an ncclbpf checkout:

  clang-19 -target bpf -mcpu=v3 -O2 -g -I DIR -c policy.bpf.c -o policy.bpf.o

The headers need no kernel header. SEC, the map definition macros and the
helpers come from libbpf's <bpf/bpf_helpers.h> where it is installed
(Debian/Ubuntu: libbpf-dev), else from ncclbpf_helpers.h: nothing but DIR is
needed. A file that exists with other contents is replaced only with --force.`,
		Examples: []string{"ncclbpf headers include", "ncclbpf headers --force /opt/ncclbpf/include"},
		Setup: func(fs *pflag.FlagSet) runFunc {
			force := fs.Bool("force", false, "replace headers that differ")
			return func(e *env, args []string) error { return runHeaders(e, args, *force) }
		},
	})
}

func runNew(e *env, args []string, hookName, out string, force bool) error {
	if len(args) != 1 {
		return usageErrorf("want one NAME, got %d arguments", len(args))
	}
	if hookName == "" {
		return usageErrorf("want --hook %s", strings.Join(skeleton.Hooks(), "|"))
	}
	name := args[0]
	if out == "" {
		out = name + ".bpf.c"
	}
	if _, err := skeleton.Source(name, hookName); err != nil {
		return &usageError{Err: err}
	}
	if err := skeleton.Write(out, name, hookName, force); err != nil {
		return err
	}
	obj := strings.TrimSuffix(strings.TrimSuffix(out, ".c"), ".bpf") + ".bpf.o"
	fmt.Fprintf(e.Stdout, "wrote %s: a %s policy, program %s\n\nnext:\n", out, hookName, name)
	fmt.Fprintf(e.Stdout, "  ncclbpf headers include    # once, where there is no ncclbpf checkout (else -I CHECKOUT/include)\n")
	fmt.Fprintf(e.Stdout, "  %s\n", skeleton.BuildCommand("include", out, obj))
	fmt.Fprintf(e.Stdout, "  ncclbpf verify %s\n", obj)
	fmt.Fprintf(e.Stdout, "  ncclbpf run %s\n", obj)
	return nil
}

func runHeaders(e *env, args []string, force bool) error {
	if len(args) != 1 {
		return usageErrorf("want one DIR, got %d arguments", len(args))
	}
	written, err := include.Write(args[0], force)
	if err != nil {
		return err
	}
	for _, p := range written {
		fmt.Fprintf(e.Stdout, "wrote %s\n", p)
	}
	fmt.Fprintf(e.Stdout, "compile with: %s\n", skeleton.BuildCommand(args[0], "policy.bpf.c", "policy.bpf.o"))
	return nil
}

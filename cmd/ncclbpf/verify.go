package main

import (
	"github.com/ncclbpf/ncclbpf/internal/offline"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		Use:     "verify [--section S] [--hook NAME] [--json] OBJ",
		Summary: "check that an object file's programs are safe for their hooks",
		Help: `Each program of OBJ is verified against the hook its ELF section attaches
to (or the hook named by --hook): memory safety on the stack, map values,
ringbuf records and the hook's context fields, null checks, termination,
allowed helpers and their arguments, and the hook's return range.

A rejection is printed as one short paragraph: the C source position, the
stable error code and why, the source line, and the instruction:

  policy.c:12:9: E012 null-deref: read through r0, which may be null ...
      return *v & 1;
      pc 7: ldxdw %r0, [%r0]

Warnings (W100 div-by-zero) do not fail the program. --json prints one
object per program instead. Exit status: 0 when every program passes, 1
otherwise. The error codes are explained in docs/error-codes.md.`,
		Examples: []string{
			"ncclbpf verify policy.bpf.o",
			"ncclbpf verify --section tuner policy.bpf.o  # one section only",
			"ncclbpf verify --hook tuner --json policy.bpf.o",
		},
		Setup: func(fs *pflag.FlagSet) runFunc {
			section := fs.String("section", "", "verify only the programs of this `SECTION` (or with this name)")
			hookName := fs.String("hook", "", "verify against this `HOOK` instead of the one the section selects")
			asJSON := fs.Bool("json", false, "print one JSON object per program")
			return func(e *env, args []string) error {
				if len(args) != 1 {
					return usageErrorf("want one object file, got %d arguments", len(args))
				}
				return offline.Verify(e.Stdout, args[0], *section, *hookName, *asJSON)
			}
		},
	})
}

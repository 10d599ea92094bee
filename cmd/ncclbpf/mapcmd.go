package main

import (
	"os"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/ctl"
	"github.com/spf13/pflag"
)

// wordsSyntax describes how the process reads KEY and VALUE (the words
// after MAP), for the help of update, lookup and delete.
const wordsSyntax = `The process reads KEY and VALUE with the map's BTF types: an integer is
decimal (10000000 is ten million) or hex with 0x, negative for a signed type,
and must fit its field; an enum takes its names; a struct takes FIELD=VALUE
settings (x=1,hist[2]=5; fields not named are zero). Raw bytes take
bpftool's forms: key 1 0 0 0 (one word a byte) or key hex 01 00 00 00,
value hex 2a 00 00 00 00 00 00 00.`

const agreedNote = `An agreed map (declared with NCCLBPF_AGREED: the same on every rank, read-only
for programs) is written with 'ncclbpf agree' at an agreed call; update
refuses it unless --force, which writes this one process now: the ranks
may decide differently until every one has the value. The same holds for
any map the tuner reads and no program writes (a table filled at load):
change it with a reload at an agreed call (--at-seq), or --force.`

func init() {
	dir, asJSON := new(string), new(bool)
	register(&command{
		Use:     "map list|dump|lookup|update|delete [--dir DIR] [--json] PID [MAP [KEY [VALUE]]]",
		Summary: "list, dump, look up, update or delete the entries of a running policy's maps",
		Help: `list shows the maps of the policy a process runs; dump prints one map's
entries, decoded with its BTF types (integers exact); lookup prints one
entry; update writes one; delete removes one from a hash map.

` + wordsSyntax,
		Examples: []string{
			"ncclbpf map list 4242",
			"ncclbpf map dump 4242 hits",
			"ncclbpf map update 4242 hits 1 -1  # hits[1] = -1",
			"ncclbpf map lookup 4242 hits 1",
		},
		Persistent: func(fs *pflag.FlagSet) {
			fs.StringVar(dir, "dir", control.DefaultDir(os.Getenv), "control socket `DIR` ($"+control.EnvDir+")")
			fs.BoolVar(asJSON, "json", false, "print JSON")
		},
		Sub: []*command{
			{
				Use:      "list [--dir DIR] [--json] PID",
				Summary:  "list the maps of the policy a process runs",
				Examples: []string{"ncclbpf map list 4242", "ncclbpf map list --json 4242"},
				Complete: completeFirstPID,
				Setup: func(*pflag.FlagSet) runFunc {
					return func(e *env, args []string) error { return ctl.MapList(e.Streams, args, *dir, *asJSON) }
				},
			},
			{
				Use:     "dump [--dir DIR] [--json] PID MAP",
				Summary: "print one map's entries, decoded with its BTF types",
				Help: `Keys and values are printed with the map's BTF types: integers exactly (to
the last digit of a 64-bit value), structs by field, global data (.rodata,
.data, .bss) with its variables' names. --json prints the same entries as JSON
with exact numbers.`,
				Examples: []string{"ncclbpf map dump 4242 hits", "ncclbpf map dump --json 4242 latency | jq .entries"},
				Complete: completeFirstPID,
				Setup: func(*pflag.FlagSet) runFunc {
					return func(e *env, args []string) error { return ctl.MapDump(e.Streams, args, *dir, *asJSON) }
				},
			},
			{
				Use:     "lookup [--dir DIR] [--json] PID MAP KEY",
				Summary: "print one entry of a map of a running process",
				Help: `Flags come before PID: what follows PID is read as MAP and KEY even where
it starts with a dash.

` + wordsSyntax,
				Examples:       []string{"ncclbpf map lookup 4242 hits 1", "ncclbpf map lookup 4242 hits key hex 01 00 00 00"},
				PositionalTail: true,
				Complete:       completeFirstPID,
				Setup: func(*pflag.FlagSet) runFunc {
					return func(e *env, args []string) error {
						return ctl.MapWords(e.Streams, "lookup", control.OpMapLookup, args, *dir, *asJSON, false)
					}
				},
			},
			{
				Use:     "update [--dir DIR] [--force] PID MAP KEY VALUE",
				Summary: "write one entry of a map of a running process",
				Help: `Flags come before PID: what follows PID is read as MAP, KEY and VALUE
even where it starts with a dash, so negative values need no quoting
(a -- before them is accepted too).

` + wordsSyntax + `

` + agreedNote,
				Examples: []string{
					"ncclbpf map update 4242 hits 1 0  # hits[1] = 0",
					"ncclbpf map update 4242 hits 1 -1  # a negative value, no quoting",
					"ncclbpf map update 4242 cfg 0 lo=4096,hi=1048576",
					"ncclbpf map update 4242 cfg key hex 00 00 00 00 value hex 00 10 00 00 00 00 00 00",
					"ncclbpf map update --force 4242 agreed 0 9  # an agreed map, this process alone",
				},
				PositionalTail: true,
				Complete:       completeFirstPID,
				Setup: func(fs *pflag.FlagSet) runFunc {
					force := fs.Bool("force", false, "write a map the tuner decides on (agreed, or no program writes it) now, on this process alone")
					return func(e *env, args []string) error {
						return ctl.MapWords(e.Streams, "update", control.OpMapUpdate, args, *dir, *asJSON, *force)
					}
				},
			},
			{
				Use:     "delete [--dir DIR] [--force] PID MAP KEY",
				Summary: "remove one entry of a hash map of a running process",
				Help: `Array entries always exist: delete applies to hash maps. Flags come before
PID.

` + wordsSyntax + `

` + agreedNote,
				Examples:       []string{"ncclbpf map delete 4242 peers 7"},
				PositionalTail: true,
				Complete:       completeFirstPID,
				Setup: func(fs *pflag.FlagSet) runFunc {
					force := fs.Bool("force", false, "delete from a map the tuner decides on, on this process alone")
					return func(e *env, args []string) error {
						return ctl.MapWords(e.Streams, "delete", control.OpMapDelete, args, *dir, *asJSON, *force)
					}
				},
			},
		},
	})
}

// completeFirstPID suggests pids for the first argument and nothing after
// (map names and values are not files).
func completeFirstPID(args []string) []string {
	if len(args) == 0 {
		return controlNames()
	}
	return []string{}
}

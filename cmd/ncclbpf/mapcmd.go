package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
	"github.com/spf13/pflag"
)

func init() {
	dir, asJSON := new(string), new(bool)
	register(&command{
		Use:     "map list|dump|update [--dir DIR] [--json] PID [MAP [KEY VALUE]]",
		Summary: "list, dump or update the maps of a running policy",
		Help: `list shows the maps of the policy a process runs; dump prints one map's
entries, decoded with its BTF types; update writes one entry.`,
		Examples: []string{
			"ncclbpf map list 4242",
			"ncclbpf map dump 4242 hits",
			"ncclbpf map update 4242 hits 1 -1  # hits[1] = -1",
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
					return func(e *env, args []string) error { return runMapList(e, args, *dir, *asJSON) }
				},
			},
			{
				Use:     "dump [--dir DIR] [--json] PID MAP",
				Summary: "print one map's entries, decoded with its BTF types",
				Help: `Keys and values are printed with the map's BTF types: integers exactly,
structs by field. --json prints the map's description and entries as the
process encodes them.`,
				Examples: []string{"ncclbpf map dump 4242 hits", "ncclbpf map dump --json 4242 latency | jq .entries"},
				Complete: completeFirstPID,
				Setup: func(*pflag.FlagSet) runFunc {
					return func(e *env, args []string) error { return runMapDump(e, args, *dir, *asJSON) }
				},
			},
			{
				Use:     "update [--dir DIR] [--force] PID MAP KEY VALUE",
				Summary: "write one entry of a map of a running process",
				Help: `Flags come before PID: what follows PID is read as MAP, KEY and VALUE
even where it starts with a dash, so negative values need no quoting
(a -- before them is accepted too).

` + updateSyntax + `

An agreed map (declared with NCCLBPF_AGREED: the same on every rank, read-only
for programs) is written with 'ncclbpf agree' at an agreed call; update
refuses it unless --force, which writes this process alone, now: its ranks
may decide differently until every one has the value. The same holds for
any map the tuner reads and no program writes (a table filled at load):
change it with a reload at an agreed call (--at-seq), or --force.`,
				Examples: []string{
					"ncclbpf map update 4242 hits 1 0  # hits[1] = 0",
					"ncclbpf map update 4242 hits 1 -1  # a negative value, no quoting",
					"ncclbpf map update 4242 cfg key hex 00 00 00 00 value hex 00 00 10 00 00 00 00 00",
					"ncclbpf map update --force 4242 agreed 0 9  # an agreed map, this process alone",
				},
				PositionalTail: true,
				Complete:       completeFirstPID,
				Setup: func(fs *pflag.FlagSet) runFunc {
					force := fs.Bool("force", false, "write a map the tuner decides on (agreed, or no program writes it) now, on this process alone")
					return func(e *env, args []string) error { return runMapUpdate(e, args, *dir, *force) }
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

func runMapList(e *env, args []string, dir string, asJSON bool) error {
	if len(args) != 1 {
		return usageErrorf("want one PID, got %d arguments", len(args))
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	resp, err := call(dir, pid, &control.Request{Op: control.OpMaps})
	if err != nil {
		return err
	}
	if asJSON {
		if resp.Maps == nil {
			resp.Maps = []control.MapInfo{}
		}
		return writeJSON(e, resp.Maps)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tKEY\tVALUE\tMAX_ENTRIES")
	for _, m := range resp.Maps {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
	}
	return tw.Flush()
}

func runMapDump(e *env, args []string, dir string, asJSON bool) error {
	if len(args) != 2 {
		return usageErrorf("want PID MAP, got %d arguments", len(args))
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	resp, err := call(dir, pid, &control.Request{Op: control.OpMapDump, Map: args[1]})
	if err != nil {
		return err
	}
	if asJSON {
		return writeRawJSON(e, resp.Dump)
	}
	var d maps.MapDump
	if err := json.Unmarshal(resp.Dump, &d); err != nil {
		return fmt.Errorf("pid %s: map %s: %w", pid, args[1], err)
	}
	return d.WriteText(e.Stdout)
}

func runMapUpdate(e *env, args []string, dir string, force bool) error {
	if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "--" {
		return usageErrorf("%q: flags go before PID", args[0])
	}
	for i, a := range args {
		if a == "--" {
			args = append(args[:i:i], args[i+1:]...)
			break
		}
	}
	if len(args) < 4 {
		return usageErrorf("want PID MAP KEY VALUE, got %d arguments", len(args))
	}
	for _, a := range args[2:] {
		if a == "--force" || strings.HasPrefix(a, "--dir") || a == "--json" {
			return usageErrorf("%q after PID: flags go before PID (what follows PID is MAP, KEY and VALUE)", a)
		}
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	name := args[1]
	// Sizes from the map list, so that integers can be encoded.
	resp, err := call(dir, pid, &control.Request{Op: control.OpMaps})
	if err != nil {
		return err
	}
	var info *control.MapInfo
	for i := range resp.Maps {
		if resp.Maps[i].Name == name {
			info = &resp.Maps[i]
		}
	}
	if info == nil {
		var names []string
		for _, m := range resp.Maps {
			names = append(names, m.Name)
		}
		return fmt.Errorf("pid %s: no map %q; the policy has: %s", pid, name, strings.Join(names, ", "))
	}
	key, val, err := parseUpdateArgs(args[2:], info.KeySize, info.ValueSize)
	if err != nil {
		return &usageError{fmt.Errorf("map %s: %w", name, err)}
	}
	hk, hv := hex.EncodeToString(key), hex.EncodeToString(val)
	if _, err := call(dir, pid, &control.Request{Op: control.OpMapUpdate, Map: name, Key: hk, Value: hv, Force: force}); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "pid %s: %s[%s] = %s\n", pid, name, hk, hv)
	return nil
}

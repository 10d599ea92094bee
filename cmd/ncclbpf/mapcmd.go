package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
)

func init() {
	register(&command{
		Name:    "map",
		Args:    "list|dump|lookup|update|delete [--dir DIR] [--json] [--force] PID [MAP [KEY [VALUE] | key DATA [value DATA]]]",
		Summary: "list, dump, look up, update or delete the entries of a running policy's maps",
		Help: `list shows the maps of the policy a process runs; dump prints one map's
entries, decoded with its BTF types (integers exact); lookup prints one
entry; update writes one; delete removes one from a hash map. The process
reads KEY and VALUE with the map's BTF types: an integer
is decimal (10000000 is ten million) or hex with 0x, negative for a signed
type, and must fit its field; an enum takes its names; a struct takes
FIELD=VALUE settings (x=1,hist[2]=5; fields not named are zero). Raw bytes
take bpftool's forms: key 1 0 0 0 (one word a byte) or key hex 01 00 00 00,
value hex 2a 00 00 00 00 00 00 00. Put -- before a negative value.

An agreed map (declared with NCCLBPF_AGREED: the same on every rank, read-only
for programs) is written with 'ncclbpf agree' at an agreed call; update
refuses it unless --force, which writes this process alone, now: its ranks
may decide differently until every one has the value. The same holds for
any map the tuner reads and no program writes (a table filled at load):
change it with a reload at an agreed call (--at-seq), or --force.`,
		Examples: []string{
			"ncclbpf map list 4242",
			"ncclbpf map dump 4242 hits",
			"ncclbpf map update 4242 hits 1 0  # hits[1] = 0",
			"ncclbpf map update 4242 cfg 0 lo=4096,hi=1048576",
			"ncclbpf map update 4242 cfg key hex 00 00 00 00 value hex 00 10 00 00 00 00 00 00",
			"ncclbpf map update 4242 deltas -- 3 -1",
			"ncclbpf map lookup 4242 hits key hex 01 00 00 00",
			"ncclbpf map delete 4242 peers 7",
		},
		Run: runMap,
	})
}

func runMap(e *env, args []string) error {
	fs := e.flags()
	dir, asJSON := controlFlags(fs)
	force := fs.Bool("force", false, "update: write a map the tuner decides on (agreed, or no program writes it) now, on this process alone")
	args, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(args) < 2 {
		return usageErrorf("want list|dump|lookup|update|delete PID [MAP [KEY [VALUE]]]")
	}
	verb := args[0]
	pid, err := parsePID(args[1])
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		if len(args) != 2 {
			return usageErrorf("map list takes PID only")
		}
		resp, err := call(*dir, pid, &control.Request{Op: control.OpMaps})
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e, resp.Maps)
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tTYPE\tKEY\tVALUE\tMAX_ENTRIES")
		for _, m := range resp.Maps {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
		}
		return tw.Flush()
	case "dump":
		if len(args) != 3 {
			return usageErrorf("map dump takes PID MAP")
		}
		resp, err := call(*dir, pid, &control.Request{Op: control.OpMapDump, Map: args[2]})
		if err != nil {
			return err
		}
		d, err := maps.DecodeDump(resp.Dump) // exact integers, fields in order
		if err != nil {
			return fmt.Errorf("pid %s: map %s: %w", pid, args[2], err)
		}
		if *asJSON {
			return d.WriteJSON(e.Stdout)
		}
		return d.WriteText(e.Stdout)
	case "update":
		if len(args) < 4 {
			return usageErrorf("map update takes PID MAP KEY VALUE, or PID MAP key DATA value DATA")
		}
		// The process reads the words with the map's BTF types (maps.ParseKeyValue).
		resp, err := call(*dir, pid, &control.Request{Op: control.OpMapUpdate, Map: args[2], Args: args[3:], Force: *force})
		if err != nil {
			return err
		}
		for _, kv := range resp.Entries {
			fmt.Fprintf(e.Stdout, "pid %s: %s[%s] = %s\n", pid, args[2], kv.Key, kv.Value)
		}
		return nil
	case "lookup", "delete":
		if len(args) < 4 {
			return usageErrorf("map %s takes PID MAP KEY, or PID MAP key DATA", verb)
		}
		op := map[string]string{"lookup": control.OpMapLookup, "delete": control.OpMapDelete}[verb]
		resp, err := call(*dir, pid, &control.Request{Op: op, Map: args[2], Args: args[3:], Force: *force})
		if err != nil {
			return err
		}
		if verb == "delete" {
			for _, kv := range resp.Entries {
				fmt.Fprintf(e.Stdout, "pid %s: %s[%s] deleted\n", pid, args[2], kv.Key)
			}
			return nil
		}
		d, err := maps.DecodeDump(resp.Dump)
		if err != nil {
			return fmt.Errorf("pid %s: map %s: %w", pid, args[2], err)
		}
		if *asJSON {
			return d.WriteJSON(e.Stdout)
		}
		return d.WriteEntries(e.Stdout)
	}
	return usageErrorf("unknown map verb %q (want list, dump, lookup, update or delete)", verb)
}

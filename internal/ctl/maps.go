package ctl

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/internal/cli"
	"github.com/ncclbpf/ncclbpf/maps"
)

// MapList prints the maps of the policy that process args[0] runs.
func MapList(e cli.Streams, args []string, dir string, asJSON bool) error {
	if len(args) != 1 {
		return cli.Usagef("want one PID, got %d arguments", len(args))
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	resp, err := call(dir, pid, &control.MapList{})
	if err != nil {
		return err
	}
	if asJSON {
		if resp.Maps == nil {
			resp.Maps = []control.MapInfo{}
		}
		return cli.WriteJSON(e.Stdout, resp.Maps)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tKEY\tVALUE\tMAX_ENTRIES")
	for _, m := range resp.Maps {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
	}
	return tw.Flush()
}

// MapDump prints the entries of map args[1] of process args[0], decoded
// with the map's BTF types.
func MapDump(e cli.Streams, args []string, dir string, asJSON bool) error {
	if len(args) != 2 {
		return cli.Usagef("want PID MAP, got %d arguments", len(args))
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	resp, err := call(dir, pid, &control.MapDump{Map: args[1]})
	if err != nil {
		return err
	}
	d, err := maps.DecodeDump(resp.Dump) // exact integers, fields in order
	if err != nil {
		return fmt.Errorf("pid %s: map %s: %w", pid, args[1], err)
	}
	if asJSON {
		return d.WriteJSON(e.Stdout)
	}
	return d.WriteText(e.Stdout)
}

// MapWords runs update, lookup or delete: PID MAP and the words the
// process reads with the map's BTF types (maps.ParseKeyValue).
func MapWords(e cli.Streams, verb, op string, args []string, dir string, asJSON, force bool) error {
	if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "--" {
		return cli.Usagef("%q: flags go before PID", args[0])
	}
	for i, a := range args {
		if a == "--" {
			args = append(args[:i:i], args[i+1:]...)
			break
		}
	}
	min, want := 3, "PID MAP KEY, or PID MAP key DATA"
	if verb == "update" {
		min, want = 4, "PID MAP KEY VALUE, or PID MAP key DATA value DATA"
	}
	if len(args) < min {
		return cli.Usagef("map %s takes %s; got %d arguments", verb, want, len(args))
	}
	for _, a := range args[2:] {
		if a == "--force" || strings.HasPrefix(a, "--dir") || a == "--json" {
			return cli.Usagef("%q after PID: flags go before PID (what follows PID is MAP, KEY and VALUE)", a)
		}
	}
	pid, err := parsePID(args[0])
	if err != nil {
		return err
	}
	name := args[1]
	var req control.Payload
	switch op {
	case control.OpMapUpdate:
		req = &control.MapUpdate{Map: name, Args: args[2:], Force: force}
	case control.OpMapLookup:
		req = &control.MapLookup{Map: name, Args: args[2:]}
	case control.OpMapDelete:
		req = &control.MapDelete{Map: name, Args: args[2:], Force: force}
	default:
		return fmt.Errorf("map %s: %q is not a map operation of the control socket", verb, op)
	}
	resp, err := call(dir, pid, req)
	if err != nil {
		return err
	}
	switch verb {
	case "update":
		if resp.Dump != nil {
			// The entry as written, decoded with the map's types.
			d, err := maps.DecodeDump(resp.Dump)
			if err != nil {
				return fmt.Errorf("pid %s: map %s: %w", pid, name, err)
			}
			if asJSON {
				return d.WriteJSON(e.Stdout)
			}
			for _, en := range d.Entries {
				fmt.Fprintf(e.Stdout, "pid %s: %s[%s] = %s\n", pid, name, maps.FormatValue(en.Key), maps.FormatValue(en.Value))
			}
			return nil
		}
		if asJSON {
			return cli.WriteJSON(e.Stdout, resp.Entries)
		}
		for _, kv := range resp.Entries { // a process that answers raw bytes only
			fmt.Fprintf(e.Stdout, "pid %s: %s[%s] = %s\n", pid, name, kv.Key, kv.Value)
		}
		return nil
	case "delete":
		if asJSON {
			return cli.WriteJSON(e.Stdout, resp.Entries)
		}
		for _, kv := range resp.Entries {
			fmt.Fprintf(e.Stdout, "pid %s: %s[%s] deleted\n", pid, name, kv.Key)
		}
		return nil
	}
	d, err := maps.DecodeDump(resp.Dump)
	if err != nil {
		return fmt.Errorf("pid %s: map %s: %w", pid, name, err)
	}
	if asJSON {
		return d.WriteJSON(e.Stdout)
	}
	return d.WriteEntries(e.Stdout)
}

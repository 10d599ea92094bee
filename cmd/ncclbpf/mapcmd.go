package main

import (
	"encoding/hex"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/ncclbpf/ncclbpf/control"
	"github.com/ncclbpf/ncclbpf/maps"
)

func init() {
	register(&command{
		Name:    "map",
		Args:    "list|dump|update [--dir DIR] [--json] [--force] PID [MAP [KEY VALUE]]",
		Summary: "list, dump or update the maps of a running policy",
		Help: `list shows the maps of the policy a process runs; dump prints one map's
entries, decoded with its BTF types; update writes one entry. KEY and VALUE
are the raw bytes in hex as the map stores them (little-endian integers):
for an array of __u64, key 1 is 01000000 and the value 42 is
2a00000000000000. A decimal integer is also accepted and encoded to the key
or value size.

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
			"ncclbpf map update 4242 cfg 00000000 0000100000000000",
		},
		Run: runMap,
	})
}

// mapBytes reads a key or value: hex bytes, or a decimal integer encoded
// little-endian to size bytes.
func mapBytes(s string, size uint32, what string) (string, error) {
	if n, err := parseDecimal(s); err == nil && size > 0 && size <= 8 && !(len(s) == 2*int(size) && isHex(s)) {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(n >> (8 * i))
		}
		return hex.EncodeToString(b), nil
	}
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		return "", usageErrorf("%s %q: want hex bytes or a decimal integer", what, s)
	}
	if size > 0 && uint32(len(b)) != size {
		return "", usageErrorf("%s %q: %d bytes, the map's %s size is %d", what, s, len(b), what, size)
	}
	return hex.EncodeToString(b), nil
}

func parseDecimal(s string) (uint64, error) {
	var n uint64
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not decimal")
		}
		n = n*10 + uint64(c-'0')
	}
	return n, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
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
		return usageErrorf("want list|dump|update PID [MAP [KEY VALUE]]")
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
		if len(args) != 5 {
			return usageErrorf("map update takes PID MAP KEY VALUE")
		}
		// Sizes from the map list, so that decimal numbers can be encoded.
		var ks, vs uint32
		if resp, err := call(*dir, pid, &control.Request{Op: control.OpMaps}); err == nil {
			for _, m := range resp.Maps {
				if m.Name == args[2] {
					ks, vs = m.KeySize, m.ValueSize
				}
			}
		} else {
			return err
		}
		key, err := mapBytes(args[3], ks, "key")
		if err != nil {
			return err
		}
		val, err := mapBytes(args[4], vs, "value")
		if err != nil {
			return err
		}
		if _, err := call(*dir, pid, &control.Request{Op: control.OpMapUpdate, Map: args[2], Key: key, Value: val, Force: *force}); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "pid %s: %s[%s] = %s\n", pid, args[2], key, val)
		return nil
	}
	return usageErrorf("unknown map verb %q (want list, dump or update)", verb)
}

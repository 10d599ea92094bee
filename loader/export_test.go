package loader

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Summary is summary, for the external tests.
var Summary = summary

// summary prints everything in c that does not depend on pointer identity,
// so that two loads can be compared.
func summary(c *CollectionSpec) string {
	var b strings.Builder
	tn := func(t btf.Type) string {
		if t == nil {
			return "-"
		}
		return fmt.Sprintf("%T:%s", t, t.TypeName())
	}
	fmt.Fprintf(&b, "license %q\n", c.License)
	for i, m := range c.Maps {
		fmt.Fprintf(&b, "map %d %q type %d key %d value %d max %d flags %#x ro %v contents %x (nil %v) %s %s\n",
			i, m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags, m.Freeze, m.Contents, m.Contents == nil, tn(m.Key), tn(m.Value))
	}
	for _, v := range c.Variables {
		fmt.Fprintf(&b, "var %q map %d off %d size %d %s\n", v.Name, v.Map, v.Offset, v.Size, tn(v.Type))
	}
	for _, p := range c.Programs {
		fmt.Fprintf(&b, "prog %q section %q license %q funcs %v\n", p.Name, p.Section, p.License, p.Funcs)
		for pc, ins := range p.Insns {
			fmt.Fprintf(&b, "  %d %016x", pc, ins.Word())
			if l := p.Lines[pc]; l != nil {
				fmt.Fprintf(&b, " %s %q", l, l.Source)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// EncodeInt is encodeInt, for the external tests.
var EncodeInt = encodeInt
